// Offline validation of Kubernetes manifests for `manifold validate`: NetworkAttachmentDefinitions
// (object shape, name syntax, spec.config as the conf/conflist manifold will run, checked with JSON
// paths into the embedded config and then by the same k8s::nad_delegate_config the ADD path uses),
// pods or pod templates (their `k8s.v1.cni.cncf.io/networks` and
// `v1.multus-cni.io/default-network` annotations, parsed by the ADD path's parser, and the scoping
// keys in each selection element's cni-args), and manifold's own deployment: its ClusterRole and
// the DaemonSet running `manifold agent`, so that an operator who edits the shipped manifests
// learns before applying them that hot-plug or the CNI binary would break. Manifests may be YAML
// (several documents) or JSON.
//
// The helpers of the deployment checks are defined inline at the end of this header, with the JSON
// helpers manifest_validate.cpp uses (that file would otherwise exceed the 400-line limit).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "cni/config_validate.h"
#include "util/json.h"

namespace manifold::k8s {

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

/// True for the ClusterRoles validate_cluster_role checks: those named "manifold…" (metadata.name
/// starts with "manifold") or labelled app=manifold. Other ClusterRoles are left unchecked.
bool is_manifold_cluster_role(const Json& role);

/// Validates manifold's ClusterRole. Each grant the plugin or the node agent needs and no rule
/// gives is an error at "$.rules" naming the resource, the verbs and the user, e.g.
/// "pods list/watch: not granted; needed for the node agent's pod watch (hot-plug)". Needed: core
/// pods get, update, list, watch; pods/status get, update; events create; k8s.cni.cncf.io
/// network-attachment-definitions get, list. "*" in apiGroups, resources or verbs matches anything
/// ("*/status" any status subresource); a rule with resourceNames satisfies nothing (manifold reads
/// any pod). A rule granting more than that — patch on pods, a write verb on NADs, anything on
/// secrets — gets a warning at "$.rules[i]". A role with an aggregationRule is not checked.
void validate_cluster_role(const Json& role, cni::Problems& out);

/// Validates a DaemonSet's pod template when a container runs `manifold agent` (in command + args,
/// "agent" right after an element ending in "manifold"). For each such container: NODE_NAME from
/// fieldRef.fieldPath spec.nodeName (or --node-name); a hostPath volumeMount covering the cache
/// (--cni-dir, default /var/lib/cni/manifold), the plugin directory (--bin-dir, /opt/cni/bin) and
/// the config directory (--conf-dir, /etc/cni/net.d), and /run/netns or /var/run/netns with
/// mountPropagation HostToContainer or Bidirectional; all but the config directory mounted at the
/// host's path (the cache records host paths); privileged, or NET_ADMIN and SYS_ADMIN added. For
/// the pod: hostNetwork true, and serviceAccountName set (else a warning). A container running
/// `manifold install` instead gets a warning that hot-plug is off; other DaemonSets get nothing.
void validate_agent_daemonset(const Json& daemonset, cni::Problems& out);

// ---- Helpers of the deployment checks, and JSON helpers manifest_validate.cpp shares ----

namespace manifest_detail {

inline void add(cni::Problems& out, std::string path, std::string message, bool warning = false) {
  out.push_back(cni::Problem{std::move(path), std::move(message), warning});
}

inline const Json* find_path(const Json& root, std::initializer_list<const char*> keys) {
  const Json* cur = &root;
  for (const char* k : keys) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

inline std::string string_at(const Json& root, std::initializer_list<const char*> keys) {
  const Json* v = find_path(root, keys);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

inline constexpr const char* kNadGroup = "k8s.cni.cncf.io";
inline constexpr const char* kNads = "network-attachment-definitions";

/// True when the RBAC list `list` holds `want` or "*".
inline bool rbac_lists(const Json* list, const std::string& want) {
  return list && list->is_array() &&
         std::any_of(list->begin(), list->end(), [&](const Json& e) { return e == "*" || e == want; });
}

/// True when `rule` grants `verb` (any verb when empty) on `resource` of API `group`.
inline bool rbac_grants(const Json& rule, const std::string& group, const std::string& resource,
                        const std::string& verb) {
  const Json* resources = find_path(rule, {"resources"});
  const Json* verbs = find_path(rule, {"verbs"});
  if (!rbac_lists(find_path(rule, {"apiGroups"}), group) || !verbs || !verbs->is_array() || verbs->empty())
    return false;
  auto slash = resource.find('/');
  bool matches = rbac_lists(resources, resource) ||
                 (slash != std::string::npos && rbac_lists(resources, "*" + resource.substr(slash)));
  return matches && (verb.empty() || rbac_lists(verbs, verb));
}

/// What `rule` grants beyond manifold's needs, as a list for a warning ("" when nothing).
inline std::string rbac_excess(const Json& rule) {
  std::string extra;
  auto note = [&](const char* what) { extra += (extra.empty() ? "" : ", ") + std::string(what); };
  if (rbac_grants(rule, "", "pods", "patch")) note("patch on pods");
  for (const char* verb : {"create", "update", "patch", "delete", "deletecollection"})
    if (rbac_grants(rule, kNadGroup, kNads, verb)) {
      note("write access to network-attachment-definitions");
      break;
    }
  if (rbac_grants(rule, "", "secrets", "")) note("access to secrets");
  return extra;
}

/// A container's command line: command, then args.
inline std::vector<std::string> argv_of(const Json& container) {
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"})
    if (const Json* list = find_path(container, {key}); list && list->is_array())
      for (const auto& a : *list) argv.push_back(a.is_string() ? a.get<std::string>() : std::string());
  return argv;
}

/// The value of `--flag value` or `--flag=value` in `argv`, else `fallback`.
inline std::string flag_value(const std::vector<std::string>& argv, const std::string& flag,
                              const std::string& fallback) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].starts_with(flag + "=")) return argv[i].substr(flag.size() + 1);
  }
  return fallback;
}

inline std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

/// Checks the volumeMount of `container` (at JSON path `cpath`) that covers the host directory
/// `dir` — the longest mountPath that is `dir` or one of its parents: it must mount a hostPath
/// volume of `pod`, at the host's own path when `same_path`, with HostToContainer or Bidirectional
/// propagation when `propagation`. Returns false when no volumeMount covers `dir`.
inline bool check_host_mount(const Json& pod, const Json& container, const std::string& cpath, const std::string& dir,
                             bool same_path, bool propagation, cni::Problems& out) {
  const Json* mounts = find_path(container, {"volumeMounts"});
  size_t index = 0;
  std::string at;
  for (size_t i = 0; mounts && mounts->is_array() && i < mounts->size(); ++i) {
    std::string p = without_trailing_slash(string_at((*mounts)[i], {"mountPath"}));
    bool covers = p == dir || (!p.empty() && dir.starts_with(p) && (p == "/" || dir[p.size()] == '/'));
    if (covers && p.size() > at.size()) index = i, at = p;
  }
  if (at.empty()) return false;
  const Json& mount = (*mounts)[index];
  std::string path = cni::json_path_index(cpath + ".volumeMounts", index), host;
  if (const Json* volumes = find_path(pod, {"volumes"}); volumes && volumes->is_array())
    for (const auto& v : *volumes)
      if (string_at(v, {"name"}) == string_at(mount, {"name"})) host = string_at(v, {"hostPath", "path"});
  if (host.empty()) {
    add(out, path, "must mount a hostPath volume: the agent uses the node's " + dir);
    return true;
  }
  std::string sub = string_at(mount, {"subPath"});
  host = without_trailing_slash(sub.empty() ? host : host + "/" + sub);
  if (same_path && host != at)
    add(out, path,
        "mounts the host's " + host + " at " + at +
            ": mount it at the same path, the cache records host paths (netns, CNI_PATH)");
  std::string mode = string_at(mount, {"mountPropagation"});
  if (propagation && mode != "HostToContainer" && mode != "Bidirectional")
    add(out, path + ".mountPropagation",
        "must be HostToContainer (or Bidirectional): without it, network namespaces created after the agent "
        "started are invisible to it");
  return true;
}

/// The checks of one container running `manifold agent`, at JSON path `cpath`.
inline void check_agent_container(const Json& pod, const Json& c, const std::string& cpath, cni::Problems& out) {
  auto argv = argv_of(c);
  bool node_env = false;
  if (const Json* env = find_path(c, {"env"}); env && env->is_array())
    for (const auto& e : *env)
      node_env |= string_at(e, {"name"}) == "NODE_NAME" &&
                  string_at(e, {"valueFrom", "fieldRef", "fieldPath"}) == "spec.nodeName";
  if (!node_env && flag_value(argv, "--node-name", "").empty())
    add(out, cpath + ".env",
        "needs NODE_NAME from fieldRef.fieldPath spec.nodeName (or --node-name): the agent watches its node's pods");
  const char* dirs[][3] = {{"--cni-dir", "/var/lib/cni/manifold", "manifold's cache"},
                           {"--bin-dir", "/opt/cni/bin", "the CNI plugin directory"},
                           {"--conf-dir", "/etc/cni/net.d", "the CNI config directory"}};
  for (const auto& [flag, fallback, what] : dirs) {
    std::string dir = without_trailing_slash(flag_value(argv, flag, fallback));
    if (!check_host_mount(pod, c, cpath, dir, std::string(flag) != "--conf-dir", false, out))
      add(out, cpath + ".volumeMounts",
          "mounts nothing at " + dir + " (" + what + ", " + flag + "): mount the host's " + dir + " at the same path");
  }
  bool netns = false;
  for (const char* dir : {"/run/netns", "/var/run/netns"})
    netns |= check_host_mount(pod, c, cpath, dir, true, true, out);
  if (!netns)
    add(out, cpath + ".volumeMounts",
        "mounts neither /run/netns nor /var/run/netns: the agent enters pods' network namespaces there (mount the "
        "host's at the same path with mountPropagation: HostToContainer)");
  const Json* caps = find_path(c, {"securityContext", "capabilities", "add"});
  auto has_cap = [&](const std::string& name) {
    return caps && caps->is_array() && std::any_of(caps->begin(), caps->end(), [&](const Json& e) {
             return e == name || e == "CAP_" + name || e == "ALL";
           });
  };
  const Json* privileged = find_path(c, {"securityContext", "privileged"});
  if (!(privileged && *privileged == true) && !(has_cap("NET_ADMIN") && has_cap("SYS_ADMIN")))
    add(out, cpath + ".securityContext",
        "must be privileged or add NET_ADMIN and SYS_ADMIN: the delegates it runs need NET_ADMIN and SYS_ADMIN");
}

}  // namespace manifest_detail

}  // namespace manifold::k8s
