// A Pod as manifold uses it, decoded once where it enters: the API server's answer to GET pod, an
// item of the agent's LIST, the object of a watch event. An answer is untrusted input, so what
// manifold reads or writes back (metadata: namespace, name, uid, resourceVersion, annotations) is
// type-checked here, and a wrongly typed answer (annotations as a list, a numeric uid, an
// annotation value that is not a string) is a clear decoding error naming the pod and the field
// instead of being read as "no annotations". The networks annotation is parsed here, once; its
// parse error is kept for the step that needs the selection, which decides whether it fails the
// call (ADD) or is told once (the agent). The object as read is kept whole: the network-status PUT
// sends it back with the new annotation (nothing the API server returned is dropped), and DRA
// resolution reads the pod's claims from it. Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cni/error.h"
#include "k8s/selection.h"
#include "util/json.h"

namespace manifold::k8s {

/// The annotation naming where a pod comes from ("api", or "file"/"http" for a static pod).
inline constexpr std::string_view kConfigSourceAnnotation = "kubernetes.io/config.source";

/// A decoded Pod.
struct Pod {
  std::string namespace_;                          ///< metadata.namespace
  std::string name;                                ///< metadata.name
  std::string uid;                                 ///< metadata.uid, "" when absent
  std::string resource_version;                    ///< metadata.resourceVersion, "" when absent
  std::map<std::string, std::string> annotations;  ///< metadata.annotations
  std::vector<SelectionElement> networks;          ///< the networks annotation, parsed; empty when absent or bad
  std::optional<cni::CniError> networks_error;     ///< why the networks annotation could not be parsed
  Json object;                                     ///< the object as read

  /// The annotation `key`, "" when absent.
  const std::string& annotation(std::string_view key) const;
  /// The networks annotation's elements (its namespace-less elements in the pod's namespace);
  /// throws the CniError its parse failed with.
  const std::vector<SelectionElement>& selected_networks() const;
  /// True for a static pod (from a file or URL on the node): its mirror pod has another UID.
  bool is_static() const;
};

/// Decodes the answer to GET pods/`name` in `ns`: the object and metadata are objects;
/// metadata.name and metadata.namespace, when present, are the strings `name` and `ns`;
/// metadata.uid and metadata.resourceVersion, when present, strings; metadata.annotations absent,
/// null or an object whose values are all strings. Throws CniError(Decoding) naming the pod "ns/name"
/// and the offending field otherwise.
Pod decode_pod(Json object, const std::string& ns, const std::string& name);

/// Decodes a pod of a LIST or a watch event: as above, with metadata.namespace and metadata.name
/// required (non-empty strings); the error names the pod as far as its metadata tells.
Pod decode_pod(Json object);

/// metadata.<key> of any API object (a PodList, a watch bookmark, a pod) when it is a string, else "".
std::string metadata_string(const Json& object, const char* key);

}  // namespace manifold::k8s
