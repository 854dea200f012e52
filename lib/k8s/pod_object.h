// The Pod object as the API server returns it, read defensively. An answer is untrusted input: before
// manifold uses a pod (its UID, resourceVersion and annotations, and later writes it back with the
// network-status annotation) the fields it relies on are type-checked, so a wrongly typed answer
// (annotations as a list, a numeric uid, an annotation value that is not a string) is a clear
// decoding error naming the pod instead of being silently read as "no annotations". Pure: no I/O.
#pragma once

#include <string>

#include "util/json.h"

namespace manifold::k8s {

/// Checks the parts of a Pod object manifold reads or writes back: the object and `metadata` are
/// objects; `metadata.name`/`namespace`, when present, are strings equal to `name`/`ns`;
/// `metadata.uid` and `metadata.resourceVersion`, when present, are strings; `metadata.annotations`
/// is absent, null or an object whose values are all strings. Throws CniError(Decoding) naming the
/// pod "ns/name" and the offending field otherwise.
void validate_pod_object(const Json& pod, const std::string& ns, const std::string& name);

/// metadata.<key> of a pod when it is a string, else "".
std::string pod_metadata_string(const Json& pod, const char* key);

/// The annotation `key` of a pod, or "" when absent (or not a string).
std::string pod_annotation_value(const Json& pod, const std::string& key);

}  // namespace manifold::k8s
