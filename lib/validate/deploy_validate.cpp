// Implementation of the deployment checks: RBAC rule matching, and the agent container's argv,
// flags, host mounts and privileges.
#include "validate/deploy_validate.h"

#include <algorithm>
#include <string>
#include <vector>

#include "validate/manifest_validate.h"

namespace manifold::validate {

namespace {

using namespace manifest_detail;

constexpr const char* kNadGroup = "k8s.cni.cncf.io";
constexpr const char* kDraGroup = "resource.k8s.io";
constexpr const char* kNads = "network-attachment-definitions";

/// True when the RBAC list `list` holds `want` or "*".
bool rbac_lists(const Json* list, const std::string& want) {
  return list && list->is_array() &&
         std::any_of(list->begin(), list->end(), [&](const Json& e) { return e == "*" || e == want; });
}

/// True when `rule` grants `verb` (any verb when empty) on `resource` of API `group`.
bool rbac_grants(const Json& rule, const std::string& group, const std::string& resource, const std::string& verb) {
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
std::string rbac_excess(const Json& rule) {
  std::string extra;
  auto note = [&](const char* what) { extra += (extra.empty() ? "" : ", ") + std::string(what); };
  auto writes = [&](const char* group, const char* resource) {
    for (const char* verb : {"create", "update", "patch", "delete", "deletecollection"})
      if (rbac_grants(rule, group, resource, verb)) return true;
    return false;
  };
  // The code writes only pods/status (PUT); a write to the pod itself would let every node, whose
  // root holds this account's token, rewrite any pod's spec.
  if (writes("", "pods")) note("write access to pods (only pods/status update is needed)");
  if (rbac_grants(rule, "", "pods/status", "patch")) note("patch on pods/status");
  if (writes(kNadGroup, kNads)) note("write access to network-attachment-definitions");
  if (rbac_grants(rule, "", "secrets", "")) note("access to secrets");
  if (writes(kDraGroup, "resourceclaims") || writes(kDraGroup, "resourceslices")) note("write access to DRA objects");
  return extra;
}

/// A container's command line: command, then args.
std::vector<std::string> argv_of(const Json& container) {
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"})
    if (const Json* list = find_path(container, {key}); list && list->is_array())
      for (const auto& a : *list) argv.push_back(a.is_string() ? a.get<std::string>() : std::string());
  return argv;
}

/// The value of `--flag value` or `--flag=value` in `argv`, else `fallback`.
std::string flag_value(const std::vector<std::string>& argv, const std::string& flag, const std::string& fallback) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].starts_with(flag + "=")) return argv[i].substr(flag.size() + 1);
  }
  return fallback;
}

std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

/// Checks the volumeMount of `container` (at JSON path `cpath`) that covers the host directory
/// `dir` — the longest mountPath that is `dir` or one of its parents: it must mount a hostPath
/// volume of `pod`, at the host's own path when `same_path`, with HostToContainer or Bidirectional
/// propagation when `propagation`. Returns false when no volumeMount covers `dir`.
bool check_host_mount(const Json& pod, const Json& container, const std::string& cpath, const std::string& dir,
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
void check_agent_container(const Json& pod, const Json& c, const std::string& cpath, cni::Problems& out) {
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

}  // namespace

bool is_manifold_cluster_role(const Json& role) {
  return string_at(role, {"kind"}) == "ClusterRole" && (string_at(role, {"metadata", "name"}).starts_with("manifold") ||
                                                        string_at(role, {"metadata", "labels", "app"}) == "manifold");
}

void validate_cluster_role(const Json& role, cni::Problems& out) {
  struct Need {
    const char* group;
    const char* resource;
    std::vector<std::string> verbs;
    const char* why;
    bool optional = false;  ///< only some pods need it: a warning when missing
  };
  const Need needs[] = {
      {"", "pods", {"get"}, "reading the pod's network selection annotations"},
      {"", "pods", {"list", "watch"}, "the node agent's pod watch (hot-plug)"},
      {"", "pods/status", {"update"}, "writing network-status"},
      {"", "events", {"create"}, "the AddedInterface/RemovedInterface events on pods"},
      {kNadGroup, kNads, {"get"}, "reading the networks pods select"},
      {kNadGroup, kNads, {"list"}, "the node agent's NAD cache (CNI calls' lookups from memory)", true},
      {kNadGroup, "multi-networkpolicies", {"list"}, "MultiNetworkPolicy rules at ADD (when enabled)", true},
      {kNadGroup, "multi-networkpolicies", {"watch"}, "the node agent's MultiNetworkPolicy sync (when enabled)", true},
      {"", "namespaces", {"list", "watch"}, "the node agent's MultiNetworkPolicy sync (when enabled)", true},
      {kNadGroup, kNads, {"list", "watch"}, "the node agent's MultiNetworkPolicy sync (when enabled)", true},
      {kDraGroup, "resourceclaims", {"get"}, "network devices of pods with DRA claims", true},
      {kDraGroup, "resourceslices", {"list"}, "network devices of pods with DRA claims", true}};
  if (find_path(role, {"aggregationRule"})) return;  // the controller fills the rules in
  const Json* rules = find_path(role, {"rules"});
  if (rules && !rules->is_array()) return add(out, "$.rules", "must be a list of rules");
  for (const auto& need : needs) {
    std::string missing;
    for (const auto& verb : need.verbs) {
      bool granted = rules && std::any_of(rules->begin(), rules->end(), [&](const Json& rule) {
                       return !find_path(rule, {"resourceNames"}) && rbac_grants(rule, need.group, need.resource, verb);
                     });
      if (!granted) missing += (missing.empty() ? "" : "/") + verb;
    }
    if (!missing.empty())
      add(out, "$.rules", std::string(need.resource) + " " + missing + ": not granted; needed for " + need.why,
          need.optional);
  }
  for (size_t i = 0; rules && i < rules->size(); ++i)
    if (std::string extra = rbac_excess((*rules)[i]); !extra.empty())
      add(out, cni::json_path_index("$.rules", i), "grants more than manifold needs: " + extra, true);
}

void validate_agent_daemonset(const Json& daemonset, cni::Problems& out) {
  const Json* pod = find_path(daemonset, {"spec", "template", "spec"});
  const Json* containers = pod ? find_path(*pod, {"containers"}) : nullptr;
  if (!containers || !containers->is_array()) return;
  const std::string base = "$.spec.template.spec";
  bool agent = false;
  for (size_t i = 0; i < containers->size(); ++i) {
    auto argv = argv_of((*containers)[i]);
    std::string cpath = cni::json_path_index(base + ".containers", i), subcommand;
    for (size_t j = 0; j + 1 < argv.size() && subcommand.empty(); ++j)
      if (argv[j].ends_with("manifold") && (argv[j + 1] == "agent" || argv[j + 1] == "install"))
        subcommand = argv[j + 1];
    if (subcommand == "install")
      add(out, cpath,
          "runs manifold install, not manifold agent: hot-plug is off (annotation changes of running pods "
          "are not applied)",
          true);
    if (subcommand != "agent") continue;
    agent = true;
    check_agent_container(*pod, (*containers)[i], cpath, out);
  }
  if (!agent) return;
  if (const Json* host_network = find_path(*pod, {"hostNetwork"}); !host_network || *host_network != true)
    add(out, base + ".hostNetwork",
        "must be true: the agent runs the delegates in the node's network namespace, as the runtime does");
  if (string_at(*pod, {"serviceAccountName"}).empty() && string_at(*pod, {"serviceAccount"}).empty())
    add(out, base + ".serviceAccountName",
        "is not set: the agent then runs as the namespace's default service account, which must be bound to "
        "manifold's ClusterRole",
        true);
}

}  // namespace manifold::validate
