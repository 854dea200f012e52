// Implementation of the sync's view of the cache: the covered attachments, the node's switch, and
// the locked, checked apply.
#include "policysync/local_attachments.h"

#include "cni/error.h"
#include "cni/install_config.h"
#include "cni/netconf.h"
#include "engine/detach.h"
#include "engine/entry_state.h"
#include "policy/enforce.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace manifold::policysync {

namespace {

// The multiNetworkPolicy settings and namespace rules of a recorded invocation's config.
std::pair<policy::PolicyConfig, k8s::NamespacePolicy> recorded_config(const cni::Invocation& inv) {
  const cni::MetaConfig meta = cni::parse_meta_config(inv.config);
  return {policy::read_policy_config(meta.multi_network_policy), k8s::namespace_policy_from_config(meta)};
}

void add_entry(const store::ContainerRecord& record, std::vector<LocalAttachment>& out) {
  if (engine::entry_state(record) != engine::EntryState::Complete) return;
  const std::optional<cni::PodRef> pod = engine::entry_pod(record);
  const std::optional<cni::Invocation> inv = engine::recorded_invocation(record);
  if (!pod || !inv) return;
  const std::string netns = engine::del_netns(record.netns);
  if (netns.empty()) return;
  std::optional<std::pair<policy::PolicyConfig, k8s::NamespacePolicy>> config;
  for (const store::AttachmentRecord& a : record.attachments) {
    if (a.policy.is_null()) continue;
    policy::PolicyState state = policy::PolicyState::from_json(a.policy);
    if (!state.applied) continue;
    if (!config) config = recorded_config(*inv);
    out.push_back({record.key(), pod->namespace_, pod->name, netns, std::move(state), config->first, config->second});
  }
}

// The generated config's meta object (a conflist's first plugin), or null.
Json node_meta(const engine::Services& services, const std::string& conf_dir) {
  for (const char* suffix : {"conflist", "conf"}) {
    const std::string path = conf_dir + "/" + std::string(cni::kGeneratedConfigPrefix) + suffix;
    try {
      Json doc = util::parse_json_bounded(services.files->read(path));
      if (!doc.is_object()) continue;
      if (auto plugins = doc.find("plugins"); plugins != doc.end())
        return plugins->is_array() && !plugins->empty() ? (*plugins)[0] : Json(nullptr);
      return doc;
    } catch (const std::exception&) {
      // not there (or unreadable): the next name
    }
  }
  return nullptr;
}

}  // namespace

std::vector<LocalAttachment> local_attachments(store::Cache& cache) {
  std::vector<LocalAttachment> out;
  for (const store::EntryKey& key : cache.list()) {
    try {
      if (auto record = cache.load(key)) add_entry(*record, out);
    } catch (const cni::CniError& e) {
      util::log_warning("policy sync: skipping the cache entry ", key.str(), ": ", e.msg());
    }
  }
  return out;
}

bool policy_enabled_on_node(const engine::Services& services, const std::string& conf_dir) {
  if (conf_dir.empty() || !services.files) return false;
  const Json meta = node_meta(services, conf_dir);
  if (!meta.is_object()) return false;
  try {
    return policy::read_policy_config(meta.value("multiNetworkPolicy", Json(nullptr))).enabled;
  } catch (const cni::CniError& e) {
    util::log_error("policy sync: the node's multiNetworkPolicy cannot be read: ", e.msg());
    return false;
  }
}

RuleApplier real_applier(const engine::Services& services, store::Cache& cache) {
  return [&services, &cache](const LocalAttachment& a, const policy::AttachmentRules& rules) {
    auto lock = cache.lock(a.key.container_id);
    std::optional<store::ContainerRecord> record = cache.load(a.key);  // again, under the lock
    if (!record || engine::entry_state(*record) != engine::EntryState::Complete) return 0;
    if (services.netns_identity) {
      const auto recorded = engine::recorded_netns_identity(*record);
      const auto now = services.netns_identity(a.netns);
      if (!now || (recorded && *recorded != *now)) return 0;  // the sandbox is going away
    }
    for (store::AttachmentRecord& attachment : record->attachments) {
      if (attachment.ifname != a.state.ifname || attachment.policy.is_null()) continue;
      policy::PolicyState state = policy::PolicyState::from_json(attachment.policy);
      scoping::IptablesRunnerPool pool = engine::iptables_pool(services, a.netns);
      const int restored = policy::apply_policy_if_changed(pool.get(state.lock_wait_seconds), state, rules, a.config);
      if (restored > 0)
        util::log_verbose("policy sync: updated the rules of ", a.state.ifname, " of pod ", a.pod_ns, "/", a.pod_name,
                          " (", restored, " famil", restored == 1 ? "y)" : "ies)");
      if (state.to_json() != attachment.policy) {
        attachment.policy = state.to_json();
        cache.save(*record);
      }
      return restored;
    }
    return 0;
  };
}

}  // namespace manifold::policysync
