// NetworkAttachmentDefinition handling: turning a NAD object, as the API server returns it, into the
// delegate's CNI config (conf or conflist, with the NAD name injected when the config has none, as
// the NPWG spec §3.4.2 and Multus do), reading its resourceName annotation, and merging a selection
// element's `cni-args` into `args.cni` of the delegate. Every field of the object is type-checked
// because API responses are untrusted input. Pure: no I/O (the confDir fallback is the caller's).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "util/json.h"

namespace manifold::k8s {

/// NAD annotation naming the device-plugin resource whose device ID the delegate receives.
inline constexpr const char* kResourceNameAnnotation = "k8s.v1.cni.cncf.io/resourceName";
/// Largest accepted NAD spec.config, in bytes.
inline constexpr std::size_t kMaxNadConfigBytes = 1024 * 1024;

/// From a NAD object produce its delegate config. spec.config must be a JSON object: a conf (with a
/// non-empty string "type") or a conflist (no "type"; "plugins" a non-empty list of objects each
/// with a non-empty string "type"). A missing, null or empty "name" gets metadata.name. Returns
/// nullopt when spec, spec.config or its text is absent or empty: the caller then looks the network
/// up in confDir by NAD name. Throws CniError(InvalidConfig) naming the NAD "ns/name" for anything
/// malformed (object shape, non-string config, not JSON, not an object, missing type/plugins, …).
std::optional<Json> nad_delegate_config(const Json& nad);

/// The NAD's `k8s.v1.cni.cncf.io/resourceName` annotation, or "" when absent or not a string.
std::string nad_resource_name(const Json& nad);

/// Merges `cni_args` (an object; null or {} is a no-op) into "args": {"cni": {...}} of a conf, or of
/// every plugin of a conflist. Keys from `cni_args` replace existing ones. Throws
/// CniError(InvalidConfig) if `cni_args` is not an object or an existing "args"/"args.cni" is not one.
void merge_cni_args(Json& delegate_config, const Json& cni_args);

/// True if the delegate config is a conflist: it has "plugins" and no top-level "type".
bool is_conflist(const Json& delegate_config);

}  // namespace manifold::k8s
