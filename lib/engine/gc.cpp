// Implementation of GC and STATUS.
#include "engine/gc.h"

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "engine/detach.h"
#include "engine/kube_access.h"
#include "engine/plan.h"
#include "engine/pod_networks.h"
#include "k8s/api_client.h"
#include "scoping/scoping.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;

// True when the runtime still lists the container of `key` (by ID, and by ifname when both are known).
bool still_valid(const std::set<std::pair<std::string, std::string>>& valid, const store::EntryKey& key) {
  for (const auto& [id, ifname] : valid)
    if (id == key.container_id && (key.ifname.empty() || ifname.empty() || ifname == key.ifname)) return true;
  return false;
}

// GC of a cache entry that cannot be read: kept when the runtime still lists its container (its
// DEL will release it); otherwise the configured networks are DELed best-effort without a
// namespace, so their IPAM lets go of what the container held, and the entry is removed.
void gc_unreadable_entry(Session& session, const cni::Invocation& inv,
                         const std::set<std::pair<std::string, std::string>>& valid, const store::EntryKey& key,
                         const CniError& why) {
  if (still_valid(valid, key)) {
    util::log_error("GC: cache entry ", key.str(), " of a live container is unreadable (", why.msg(), "); keeping it");
    return;
  }
  util::log_error("GC: cache entry ", key.str(), " is unreadable (", why.msg(),
                  "); releasing the configured networks best-effort and removing it");
  cni::Invocation gone = inv;
  gone.container_id = key.container_id;
  gone.ifname = key.ifname.empty() ? (inv.ifname.empty() ? "eth0" : inv.ifname) : key.ifname;
  store::ContainerRecord record;
  record.container_id = key.container_id;
  record.netns = kNoNetns;
  std::optional<CniError> error;
  try {
    record.attachments = rebuilt_attachments(session.config, resolve_static_attachments(session.config, gone));
    delete_attachments(session, gone, record, "", error);
  } catch (const CniError& e) {
    error = e;
  }
  if (error) util::log_error("GC: best-effort DEL of ", key.str(), ": ", error->msg());
  forget_entry(*session.cache, key);
}

// The attachments of the networks manifold is configured with (no pod): for GC and STATUS. NAD
// names are resolved through the API when Kubernetes is configured, as ADD resolves them.
std::vector<Attachment> configured_attachments(const Services& services, const Session& session,
                                               const cni::Invocation& inv) {
  cni::Invocation named = inv;
  if (named.ifname.empty()) named.ifname = "eth0";
  KubeAccess kube(services, session.config);
  return resolve_configured_attachments(session.config, named, kube);
}

// The delegate config of a configured network as its GC or STATUS gets it: scoping keys stripped,
// runtimeConfig injected.
std::string configured_delegate_text(const cni::MetaConfig& config, const Attachment& a) {
  Json delegate = a.delegate;
  (void)scoping::strip_scoping_keys(delegate);  // the scoping keys never reach a delegate
  return cni::prepare_delegate(delegate, a.runtime_config, config.cni_version).dump();
}

// GC step 1: DEL (without a namespace) and forget every entry of this network whose container the
// runtime no longer lists. First-layout entries (no network recorded) are collected by any GC.
void collect_stale_entries(Session& session, const cni::Invocation& inv,
                           const std::set<std::pair<std::string, std::string>>& valid, std::optional<CniError>& error) {
  for (const auto& key : session.cache->list()) {
    if (!key.legacy() && key.network != session.config.name) continue;
    auto lock = session.cache->lock(key.container_id);
    std::optional<store::ContainerRecord> record;
    try {
      record = session.cache->load(key);
    } catch (const CniError& e) {
      gc_unreadable_entry(session, inv, valid, key, e);
      continue;
    }
    if (!record || still_valid(valid, record->key().legacy() ? store::EntryKey{key.container_id, "", record->ifname}
                                                             : record->key()))
      continue;
    util::log_verbose("GC: ", key.str(), " is not a valid attachment; deleting its networks");
    cni::Invocation gone = inv;
    gone.container_id = record->container_id;
    // The runtime no longer knows this container: its namespace is not ours to enter any more, so
    // the delegates get no CNI_NETNS and only release what they hold (IPAM).
    auto failed = delete_attachments(session, gone, *record, "", error);
    if (failed.empty()) {
      forget_entry(*session.cache, key);
    } else {
      // Only deleted attachments leave the cache; the others stay for the next GC or DEL.
      util::log_error("GC: ", failed.size(), " network(s) of ", key.str(),
                      " could not be deleted; keeping them cached");
      if (record->network.empty()) record->network = session.config.name;
      keep_failed(*session.cache, *record, std::move(failed));
    }
  }
}

// GC step 2: the attachments of network `name` that remain cached, for its delegate's own GC.
Json remaining_attachments_of(store::Cache& cache, const std::string& network, const std::string& name) {
  Json still = Json::array();
  for (const auto& key : cache.list()) {
    if (!key.legacy() && key.network != network) continue;
    try {
      auto record = cache.load(key);
      if (!record) continue;
      for (const auto& r : record->attachments)
        if (r.name == name) still.push_back({{"containerID", key.container_id}, {"ifname", r.ifname}});
    } catch (const CniError&) {}
  }
  return still;
}

}  // namespace

std::set<std::pair<std::string, std::string>> parse_valid_attachments(const Json& config) {
  std::set<std::pair<std::string, std::string>> valid;
  auto it = config.find("cni.dev/valid-attachments");
  if (it == config.end() || it->is_null())
    cni::throw_invalid_config(
        "invalid config: GC needs \"cni.dev/valid-attachments\" (the attachments to keep; [] collects all)");
  if (!it->is_array()) cni::throw_invalid_config("invalid config: key \"cni.dev/valid-attachments\" must be a list");
  for (const auto& v : *it) {
    if (!v.is_object() || !v.contains("containerID") || !v["containerID"].is_string() ||
        (v.contains("ifname") && !v["ifname"].is_string()))
      cni::throw_invalid_config(
          "invalid config: entries of \"cni.dev/valid-attachments\" need string \"containerID\" and \"ifname\"");
    valid.emplace(v["containerID"].get<std::string>(), v.value("ifname", std::string()));
  }
  return valid;
}

void collect_garbage(const Services& services, Session& session, const cni::Invocation& inv) {
  auto valid = parse_valid_attachments(inv.config);
  if (int swept = session.cache->sweep_orphan_locks())
    util::log_verbose("GC: removed ", swept, " orphaned lock file(s)");
  std::optional<CniError> error;
  collect_stale_entries(session, inv, valid, error);
  // Delegates that speak 1.1.0 get their own GC with the attachments that remain theirs. The cache
  // part above needs no API; resolving NAD-named networks does, and its failure is reported after.
  std::vector<Attachment> configured;
  try {
    configured = configured_attachments(services, session, inv);
  } catch (const CniError& e) {
    util::log_error("GC: cannot resolve the configured networks for their own GC: ", e.msg());
    if (!error) error = e;
  }
  for (const auto& a : configured) {
    try {
      session.runner->gc(configured_delegate_text(session.config, a),
                         remaining_attachments_of(*session.cache, session.config.name, a.name), inv.path);
    } catch (const CniError& e) {
      if (!error) error = e;
    }
  }
  if (error) throw *error;
}

void report_status(const Services& services, Session& session, const cni::Invocation& inv) {
  std::vector<Attachment> configured;
  try {
    configured = configured_attachments(services, session, inv);
  } catch (const k8s::ApiError& e) {
    // The cluster network is a NAD and the API cannot say what it is: an unreachable API server
    // does not make the node's pod network unready (ADD of pods without it may still work, and the
    // runtime would otherwise stop scheduling); readiness is the cluster delegate's to report.
    util::log_warning("STATUS: cannot resolve the cluster network through the Kubernetes API (", e.msg(),
                      "); reporting ready without asking its delegate");
    return;
  }
  const Attachment& cluster = configured.front();
  if (!session.runner->status(configured_delegate_text(session.config, cluster), inv.path))
    util::log_verbose("cluster network \"", cluster.name, "\" predates STATUS; reporting ready");
}

}  // namespace manifold::engine
