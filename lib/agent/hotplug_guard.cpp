// Implementation of the hot-plug's checks: the namespace identity against the entry's record and the
// agent's own namespace, and the namespace policy of the node's current generated config.
#include "agent/hotplug_guard.h"

#include <exception>

#include "cni/error.h"
#include "cni/install_config.h"
#include "engine/entry_state.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace manifold::agent {

namespace {

using cni::CniError;
using netlink::NetnsIdentity;

constexpr const char* kOwnNetns = "/proc/self/ns/net";

bool under_proc(const std::string& path) { return path.rfind("/proc/", 0) == 0; }

/// The meta-plugin object of a generated config's text (a .conf, or a .conflist's first plugin
/// with the list's name and cniVersion); null when it is neither.
Json meta_object(const std::string& text) {
  Json doc = util::parse_json_bounded(text);
  if (doc.is_discarded() || !doc.is_object()) return nullptr;
  auto plugins = doc.find("plugins");
  if (plugins == doc.end()) return doc;
  if (!plugins->is_array() || plugins->empty() || !(*plugins)[0].is_object()) return nullptr;
  Json meta = (*plugins)[0];
  for (const char* key : {"name", "cniVersion"})
    if (doc.contains(key)) meta[key] = doc[key];
  return meta;
}

}  // namespace

std::optional<std::string> netns_refusal(const engine::Services& services, store::ContainerRecord& record,
                                         const std::string& netns) {
  std::optional<NetnsIdentity> recorded, now, own;
  try {
    recorded = engine::recorded_netns_identity(record);
    if (services.netns_identity) {
      now = services.netns_identity(netns);
      own = services.netns_identity(kOwnNetns);
    }
  } catch (const CniError& e) {
    return e.msg();
  }
  if (!services.netns_identity) {
    if (recorded || under_proc(netns)) return "the identity of network namespace " + netns + " cannot be checked";
    return std::nullopt;
  }
  if (!now) return "network namespace " + netns + " no longer exists";
  if (!own) return "the agent's own network namespace cannot be read, so " + netns + " cannot be checked against it";
  if (*now == *own) return netns + " names the agent's own network namespace (" + now->str() + "), not a sandbox's";
  if (recorded) {
    if (*recorded == *now) return std::nullopt;
    return netns + " names another network namespace (" + now->str() + ") than the one the sandbox was added in (" +
           recorded->str() + ")";
  }
  if (under_proc(netns))
    return "the cache entry records no namespace identity (written by an older manifold) and " + netns +
           " may name another process's namespace since";
  engine::record_netns_identity(record, *now);  // a bind mount keeps its namespace: pinned from here on
  return std::nullopt;
}

void apply_current_namespace_policy(const engine::Services& services, const std::string& conf_dir,
                                    cni::MetaConfig& config) {
  if (conf_dir.empty() || !services.files) return;
  for (const char* suffix : {"conflist", "conf"}) {
    const std::string path = conf_dir + "/" + std::string(cni::kGeneratedConfigPrefix) + suffix;
    try {
      Json meta = meta_object(services.files->read(path));
      if (meta.is_null()) continue;
      cni::MetaConfig current = cni::parse_meta_config(meta);
      config.namespace_isolation = current.namespace_isolation;
      config.global_namespaces = current.global_namespaces;
      config.global_namespaces_set = current.global_namespaces_set;
      return;
    } catch (const CniError& e) {
      util::log_verbose("agent: ignoring the namespace policy of ", path, ": ", e.msg());
    } catch (const std::exception&) {
      // not there (or unreadable): the next name, else the policy the ADD recorded
    }
  }
}

}  // namespace manifold::agent
