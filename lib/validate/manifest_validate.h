// Offline validation of Kubernetes manifests for `manifold validate`: NetworkAttachmentDefinitions
// (object shape, name syntax, spec.config as the conf/conflist manifold will run, checked with JSON
// paths into the embedded config and then by the same k8s::nad_delegate_config the ADD path uses),
// pods or pod templates (their `k8s.v1.cni.cncf.io/networks` and
// `v1.multus-cni.io/default-network` annotations, parsed by the ADD path's parser, and the scoping
// keys in each selection element's cni-args), and manifold's own deployment: its ClusterRole and
// the DaemonSet running `manifold agent`, so that an operator who edits the shipped manifests
// learns before applying them that hot-plug or the CNI binary would break. Manifests may be YAML
// (several documents) or JSON.
// The checks of manifold's own deployment are in validate/deploy_validate.h.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "cni/config_validate.h"
#include "util/json.h"

namespace manifold::validate {

/// The findings for one document of a manifest file.
struct ManifestReport {
  std::string label;       ///< "NetworkAttachmentDefinition default/macvlan-conf", "Pod ns/name", "document 3"
  cni::Problems problems;  ///< paths are rooted at the document ("$.spec.config.type")
  bool checked = true;     ///< false for kinds manifold does not check (ServiceAccounts, CRDs, …)
};

/// Parses a manifest file: a JSON object, a JSON list of objects, or YAML with one or more
/// documents (empty documents are skipped). YAML scalars become JSON strings, except plain
/// (unquoted) true/false, null/~ and numbers. Throws CniError(Decoding) with the parser's message
/// and line when the text is neither.
std::vector<Json> load_manifests(std::string_view text);

/// Validates one NetworkAttachmentDefinition object.
void validate_nad(const Json& nad, cni::Problems& out, const cni::ScopingChecker& scoping = nullptr);

/// Validates the network-selection annotations of a pod-like object whose metadata is at
/// `metadata_path` (e.g. "$.metadata" for a Pod, "$.spec.template.metadata" for a Deployment).
void validate_pod_annotations(const Json& metadata, const std::string& metadata_path, const std::string& pod_namespace,
                              cni::Problems& out, const cni::ScopingChecker& scoping = nullptr);

/// Validates every document of a manifest file. With `nads_only`, any document that is not a
/// NetworkAttachmentDefinition is an error; otherwise NADs, Pods, pod templates (Deployment,
/// StatefulSet, DaemonSet, ReplicaSet, Job, CronJob), manifold's ClusterRoles and the DaemonSets
/// running manifold are checked, and other kinds (or other ClusterRoles) are marked unchecked.
std::vector<ManifestReport> validate_manifest_text(std::string_view text, bool nads_only,
                                                   const cni::ScopingChecker& scoping = nullptr);

// ---- JSON helpers shared by the manifest checks (here and validate/deploy_validate.cpp) ----

namespace manifest_detail {

inline void add(cni::Problems& out, std::string path, std::string message, bool warning = false) {
  out.push_back(cni::Problem{std::move(path), std::move(message), warning});
}

inline const Json* find_path(const Json& root, std::initializer_list<const char*> keys) { return json_at(root, keys); }

inline std::string string_at(const Json& root, std::initializer_list<const char*> keys) {
  return json_string_at(root, keys);
}

}  // namespace manifest_detail

}  // namespace manifold::validate
