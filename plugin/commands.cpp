// Implementation of the CNI verbs. Each verb is a checklist: parse the config, set up logging, wait
// for readiness, take the container's cache lock, then do the verb's work through the delegate
// runner; failures of ADD roll back every attachment already made, in reverse.
#include "plugin/commands.h"

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "cni/netconf.h"
#include "cni/result_codec.h"
#include "exec/delegate_runner.h"
#include "exec/plugin_finder.h"
#include "exec/plugin_invoker.h"
#include "k8s/beast_transport.h"
#include "k8s/device_checkpoint.h"
#include "k8s/isolation.h"
#include "k8s/network_status.h"
#include "util/env.h"
#include "plugin/attachments.h"
#include "plugin/cached_attachment.h"
#include "netlink/real_net_ops.h"
#include "plugin/kube.h"
#include "plugin/kube_attachments.h"
#include "plugin/kube_status.h"
#include "plugin/logging.h"
#include "plugin/scoping.h"
#include "util/ip.h"
#include "util/log_file.h"
#include "util/log.h"

extern char** environ;

namespace manifold::plugin {

namespace {

using cni::CniError;
using cni::ErrorCode;

/// What every verb sets up first.
struct Session {
  cni::MetaConfig config;
  std::unique_ptr<store::Cache> cache;
  std::unique_ptr<exec::PluginInvoker> invoker;
  std::unique_ptr<exec::DelegateRunner> runner;
  std::vector<std::string> search_dirs;
  /// The cache entry of this call: container, network name and CNI_IFNAME.
  store::EntryKey key;
};

Session open_session(const Services& s, const cni::Invocation& inv) {
  Session session;
  session.config = cni::parse_meta_config(inv.config);
  configure_logging(session.config, inv);
  session.key = {inv.container_id, session.config.name, inv.ifname};
  std::vector<std::string> dirs;
  if (!session.config.bin_dir.empty()) dirs.push_back(session.config.bin_dir);
  for (auto& d : exec::split_cni_path(inv.path)) dirs.push_back(std::move(d));
  session.search_dirs = dirs;
  session.cache = s.open_cache(session.config.cni_dir);
  session.invoker = std::make_unique<exec::PluginInvoker>(
      *s.runner, dirs, std::chrono::seconds(session.config.delegate_timeout_s), s.environment,
      session.config.delegate_env);
  session.runner = std::make_unique<exec::DelegateRunner>(*session.invoker);
  return session;
}

/// How a verb treats a readiness indicator file that is not there yet.
enum class Readiness {
  Wait,      ///< ADD, GC, STATUS: poll for it, bounded by readinessTimeout
  LookOnce,  ///< DEL: look once, warn and go on (a DEL must release what it can)
};

// Waits for the readiness indicator file as `mode` says.
void wait_for_readiness(const Services& s, const cni::MetaConfig& c, Readiness mode) {
  const std::string& file = c.readiness_indicator_file;
  if (file.empty() || s.file_exists(file)) return;
  if (mode == Readiness::LookOnce) {
    util::log_warning("readiness indicator file ", file, " does not exist; continuing DEL");
    return;
  }
  for (int waited = 0; waited < c.readiness_timeout_s; ++waited) {
    s.sleep(std::chrono::seconds(1));
    if (s.file_exists(file)) return;
  }
  throw CniError(ErrorCode::TryAgainLater,
                 "have you checked that your default network is ready? still waiting for "
                 "readinessindicatorfile @ " + file + " after " + std::to_string(c.readiness_timeout_s) + "s");
}

// Finds every plugin binary of every attachment before anything runs, so a bad `type` or a missing
// binary fails the ADD with nothing created.
void preflight_plugins(const Session& s, const std::vector<Attachment>& attachments) {
  for (const auto& a : attachments) {
    if (cni::is_conflist(a.delegate)) {
      for (const auto& p : a.delegate["plugins"])
        (void)exec::find_plugin_or_builtin(p["type"].get<std::string>(), s.search_dirs);
    } else {
      (void)exec::find_plugin_or_builtin(a.delegate["type"].get<std::string>(), s.search_dirs);
    }
  }
}

// The pod of this invocation, when Kubernetes is configured and CNI_ARGS names one.
std::optional<Json> lookup_pod(KubeAccess& kube, const cni::Invocation& inv) {
  auto ref = cni::pod_ref_from(inv.args);
  if (!kube.configured() || !ref.known()) return std::nullopt;
  return fetch_pod(kube, ref);
}

// Reads the kubelet's device checkpoint for the pod (only when a NAD asks for a resource).
k8s::DeviceAllocator device_allocator(const Services& services, const cni::MetaConfig& config, const Json& pod) {
  std::string uid;
  if (pod.contains("metadata") && pod["metadata"].is_object() && pod["metadata"].value("uid", Json()).is_string())
    uid = pod["metadata"]["uid"].get<std::string>();
  return k8s::DeviceAllocator([&services, path = config.kubelet_checkpoint_file, uid] {
    try {
      Json j = Json::parse(services.files->read(path, 16u << 20), nullptr, false);
      return k8s::pod_devices(j, uid);
    } catch (const CniError& e) {
      util::log_verbose("no kubelet device checkpoint: ", e.msg());
      return k8s::DeviceAllocator::Table{};
    }
  });
}

// Every attachment of this invocation: from the pod and its NADs when there is one, else static.
std::vector<Attachment> resolve_attachments(const Services& services, Session& s, KubeAccess& kube,
                                            const cni::Invocation& inv, const std::optional<Json>& pod,
                                            Resolution mode = Resolution::Strict) {
  if (!pod) return resolve_static_attachments(s.config, inv);
  auto devices = device_allocator(services, s.config, *pod);
  return resolve_pod_attachments(s.config, inv, kube, *pod, devices, mode);
}

// Where a delegate call of attachment `a` applies. Throws CniError(Decoding) when the cached
// CNI_ARGS of `a` are not a string (a corrupt cache entry).
exec::DelegateTarget target_for(const cni::Invocation& inv, const std::string& netns,
                                const store::AttachmentRecord& a) {
  exec::DelegateTarget t;
  t.container_id = inv.container_id;
  t.netns = netns;
  t.ifname = a.ifname;
  t.cni_args = cached_cni_args(a, inv.args_text);
  t.cni_path = inv.path;
  return t;
}

// target_for() for a DEL: a corrupt cached CNI_ARGS is a decoding problem of that entry, logged,
// and the delegate is DELeted best-effort with the runtime's CNI_ARGS instead.
exec::DelegateTarget del_target_for(const cni::Invocation& inv, const std::string& netns,
                                    const store::AttachmentRecord& a) {
  try {
    return target_for(inv, netns, a);
  } catch (const CniError& e) {
    util::log_error("cache entry of container ", inv.container_id, " cannot be decoded: ", e.msg(),
                    "; deleting the network with the runtime's CNI_ARGS");
    store::AttachmentRecord plain = a;
    plain.extra.erase("cniArgs");
    return target_for(inv, netns, plain);
  }
}


// Marks a rebuilt record whose delegates must be DELeted without a namespace.
const std::string kNoNetns = "-";

// The netns path delegates get on DEL: empty when it no longer exists (spec: do what cleanup you can).
std::string del_netns(const std::string& netns) {
  if (netns.empty() || netns == kNoNetns) return std::string();
  std::error_code ec;
  return std::filesystem::exists(netns, ec) ? netns : std::string();
}

// The iptables runners of the pod namespace `netns`, for network scoping (created on first use).
IptablesRunnerPool iptables_pool(const Services& s, const std::string& netns) {
  if (!s.open_iptables) return IptablesRunnerPool::real(netns);
  return IptablesRunnerPool([&s, netns](int wait) { return s.open_iptables(netns, wait); });
}

// Network scoping in one pod namespace, for DEL.
struct ScopingSession {
  std::unique_ptr<netlink::NetOps> net;
  IptablesRunnerPool iptables;
  ScopingEnv env;
  ScopingSession(const Services& s, const std::string& netns)
      : net(s.open_netns(netns)), iptables(iptables_pool(s, netns)), env{*net, iptables} {}
};

// Scoping for DEL in `netns`, or nothing when the namespace is gone (our rules died with it) or no
// attachment of `record` has scoping state.
std::unique_ptr<ScopingSession> open_scoping_for_del(const Services& s, const std::string& netns,
                                                     const store::ContainerRecord& record) {
  bool any = false;
  for (const auto& a : record.attachments) any = any || a.extra.contains("scoping");
  if (!any || netns.empty()) return nullptr;
  try {
    return std::make_unique<ScopingSession>(s, netns);
  } catch (const netlink::NetnsNotFound&) {
    return nullptr;
  } catch (const CniError& e) {
    util::log_warning("cannot open ", netns, " to remove network scoping: ", e.msg());
    return nullptr;
  }
}

// Removes an attachment's network scoping before its delegate's DEL. Its own result, else the
// runtime's prevResult, names its IPs for the case that the applied state was never cached.
void remove_attachment_scoping(ScopingEnv& env, const cni::Invocation& inv, const store::AttachmentRecord& a) {
  std::optional<cni::Result> prev;
  try {
    if (!a.result.empty())
      prev = cni::decode_result_text(a.result, cni::delegate_version(Json::parse(a.config)));
    else if (inv.config.contains("prevResult"))
      prev = cni::decode_result(inv.config["prevResult"], inv.version);
  } catch (const std::exception& e) {
    util::log_verbose("no usable result for the scoping DEL of ", a.ifname, ": ", e.what());
  }
  remove_scoping(env, a.extra["scoping"], a.ifname, prev ? &*prev : nullptr);
}

}  // namespace

// Removes a cache entry after its attachments were deleted. A failure (a read-only or broken
// cniDir) is logged, not thrown: everything the entry describes is already released, and a stale
// entry is harmless (its DEL is idempotent; the next DEL or GC removes it).
void forget_entry(store::Cache& cache, const store::EntryKey& key) {
  try {
    cache.remove(key);
  } catch (const CniError& e) {
    util::log_error("cannot remove the cache entry of container ", key.container_id, " in network \"", key.network,
                    "\" on ", key.ifname, " (", e.msg(), "); its networks were deleted, the next DEL or GC removes it");
  }
}

// Stores the attachments of `record` whose DEL failed, for the next DEL to retry; a failure to
// store them is logged (the caller reports the DEL's own error).
void keep_failed(store::Cache& cache, store::ContainerRecord record, std::vector<store::AttachmentRecord> failed) {
  record.attachments = std::move(failed);
  try {
    cache.save(record);
  } catch (const CniError& e) {
    util::log_error("cannot record the failed deletions of container ", record.container_id, ": ", e.msg());
  }
}

std::vector<store::AttachmentRecord> delete_attachments(exec::DelegateRunner& runner, const cni::Invocation& inv,
                                                        const store::ContainerRecord& record, const std::string& netns,
                                                        std::optional<CniError>& first_error, ScopingEnv* scoping) {
  std::vector<store::AttachmentRecord> failed;
  for (size_t i = record.attachments.size(); i-- > 0;) {
    const auto& a = record.attachments[i];
    bool ok = true;
    try {
      if (scoping && a.extra.contains("scoping")) remove_attachment_scoping(*scoping, inv, a);
    } catch (const CniError& e) {
      util::log_error("removing the network scoping of \"", a.name, "\" (", a.ifname, ") failed: ", e.msg());
      if (!first_error) first_error = CniError(e.code(), "removing the network scoping of \"" + a.name + "\" (" +
                                                             a.ifname + ") failed: " + e.msg(), e.details());
      ok = false;
    }
    try {
      runner.del(a.config, a.result, del_target_for(inv, netns, a));
    } catch (const CniError& e) {
      util::log_error("DEL of network \"", a.name, "\" (", a.ifname, ") failed: ", e.msg());
      if (!first_error) first_error = CniError(e.code(), "DEL of network \"" + a.name + "\" (" + a.ifname +
                                                             ") failed: " + e.msg(), e.details());
      ok = false;
    }
    if (!ok) failed.insert(failed.begin(), a);
  }
  return failed;
}

namespace {

// Undoes a partial ADD: DEL of every recorded attachment in reverse. The last one is the delegate
// whose ADD failed; its DEL is attempted but a failure there is only logged (a plugin cleans up after
// its own failed ADD). The cache entry goes away unless the DEL of an attachment that *had* been
// added failed; those stay recorded for the runtime's DEL to retry.
void roll_back(Session& s, const cni::Invocation& inv, store::ContainerRecord& record, bool last_failed,
               ScopingEnv* scoping) {
  // Nothing of this ADD was recorded (it failed before its first delegate): an existing entry
  // belongs to an earlier ADD of the same container and must survive.
  if (record.attachments.empty()) return;
  std::optional<CniError> error;
  auto failed = delete_attachments(*s.runner, inv, record, del_netns(record.netns), error, scoping);
  if (last_failed && !failed.empty() && !record.attachments.empty() &&
      failed.back().ifname == record.attachments.back().ifname)
    failed.pop_back();
  // The ADD's own error is what the runtime must see: cache trouble here is only logged.
  if (failed.empty()) {
    forget_entry(*s.cache, record.key());
    return;
  }
  keep_failed(*s.cache, record, std::move(failed));
}

// ADD refuses to overwrite a cache entry of the same container and network that it cannot read: it
// may describe attachments only its DEL can still release.
void refuse_unreadable_entry(store::Cache& cache, const store::EntryKey& key) {
  try {
    cache.load(key);
  } catch (const CniError& e) {
    throw CniError(e.code(), "cannot ADD container " + key.container_id + " to network \"" + key.network +
                                 "\": its cache entry is unreadable (" + e.msg() +
                                 "); DEL the container first, which releases what it can and removes it");
  }
}

// The first attachment of `record` whose cached delegate config cannot be replayed, or null.
const store::AttachmentRecord* first_unusable(const store::ContainerRecord& record) {
  for (const auto& a : record.attachments)
    if (!has_usable_config(a)) return &a;
  return nullptr;
}

// Checks that an attachment's interface exists and carries the addresses its result reported.
void check_interface(netlink::NetOps& ops, const store::AttachmentRecord& a) {
  auto link = ops.find_link(a.ifname);
  if (!link)
    throw CniError(ErrorCode::CheckFailed, "interface " + a.ifname + " of network \"" + a.name +
                                               "\" is missing from the network namespace");
  cni::Result r;
  try {
    r = decode_attachment_result(a);
  } catch (const CniError& e) {
    throw CniError(ErrorCode::Decoding, "the cached result of network \"" + a.name + "\" (" + a.ifname +
                                            ") cannot be decoded: " + e.msg());
  }
  std::set<std::string> present;
  for (const auto& addr : ops.list_addresses(link->index)) present.insert(addr.cidr);
  for (const auto& ip : r.ips) {
    if (!ip.interface || *ip.interface >= static_cast<int>(r.interfaces.size())) continue;
    const auto& itf = r.interfaces[*ip.interface];
    if (itf.sandbox.empty() || itf.name != a.ifname) continue;
    auto want = util::parse_cidr(ip.address);
    bool found = false;
    for (const auto& p : present) {
      auto have = util::parse_cidr(p);
      if (have && want && have->str() == want->str()) found = true;
    }
    if (!found)
      throw CniError(ErrorCode::CheckFailed, "address " + ip.address + " of network \"" + a.name +
                                                 "\" is missing from interface " + a.ifname);
  }
}

// Writes network-status (not for pods of systemNamespaces) and the AddedInterface events (for all).
// `results[i]` is the decoded result of `record.attachments[i]`.
void publish_status(KubeAccess& kube, util::FileReader& files, const cni::MetaConfig& config,
                    const cni::Invocation& inv, const Json& pod, const store::ContainerRecord& record,
                    const std::vector<cni::Result>& results) {
  auto ref = cni::pod_ref_from(inv.args);
  auto policy = k8s::namespace_policy_from_config(config.raw);
  if (!k8s::is_system_namespace(policy, ref.namespace_))  // as in Multus: no status there, but events
    write_network_status(kube, ref, pod, k8s::render_network_status(status_inputs(record, results, files)));
  send_added_events(kube, ref, pod, record, results);
}

// The records a DEL without a usable cache entry works from: `attachments` as they would have
// been added (delegate config as prepared for them, planned scoping state), without results.
std::vector<store::AttachmentRecord> rebuilt_attachments(const cni::MetaConfig& config,
                                                         std::vector<Attachment> attachments) {
  std::vector<ScopingPlan> plans;
  try {
    plans = plan_attachments_scoping(config.scoping, attachments);
  } catch (const CniError& e) {
    util::log_error("cannot plan the network scoping for DEL: ", e.msg());
  }
  std::vector<store::AttachmentRecord> records;
  for (size_t i = 0; i < attachments.size(); ++i) {
    const auto& a = attachments[i];
    store::AttachmentRecord rec;
    rec.name = a.name;
    rec.ifname = a.ifname;
    rec.cluster_network = a.cluster_network;
    rec.config = cni::prepare_delegate(a.delegate, a.runtime_config, config.cni_version).dump();
    if (i < plans.size())
      if (Json st = initial_scoping_state(plans[i]); !st.is_null()) rec.extra["scoping"] = st;
    records.push_back(std::move(rec));
  }
  return records;
}

// The attachments GC must keep, from `cni.dev/valid-attachments`: (containerID, ifname) pairs. The
// key is required (spec 1.1): without it GC would collect every container of the network, so a
// missing or null list is refused; an empty list is a valid request to collect everything.
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

// True when the runtime still lists the container of `key` (by ID, and by ifname when both are known).
bool still_valid(const std::set<std::pair<std::string, std::string>>& valid, const store::EntryKey& key) {
  for (const auto& [id, ifname] : valid)
    if (id == key.container_id && (key.ifname.empty() || ifname.empty() || ifname == key.ifname)) return true;
  return false;
}

// GC of a cache entry that cannot be read: kept when the runtime still lists its container (its
// DEL will release it); otherwise the configured networks are DELed best-effort without a
// namespace, so their IPAM lets go of what the container held, and the entry is removed.
void gc_unreadable_entry(Session& s, const cni::Invocation& inv,
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
    record.attachments = rebuilt_attachments(s.config, resolve_static_attachments(s.config, gone));
    delete_attachments(*s.runner, gone, record, "", error);
  } catch (const CniError& e) {
    error = e;
  }
  if (error) util::log_error("GC: best-effort DEL of ", key.str(), ": ", error->msg());
  forget_entry(*s.cache, key);
}

// The attachments of the networks manifold is configured with (no pod): for GC and STATUS. NAD
// names are resolved through the API when Kubernetes is configured, as ADD resolves them.
std::vector<Attachment> configured_attachments(const Services& services, const Session& s, const cni::Invocation& inv) {
  cni::Invocation named = inv;
  if (named.ifname.empty()) named.ifname = "eth0";
  KubeAccess kube(services, s.config);
  return resolve_configured_attachments(s.config, named, kube);
}

// The delegate config of a configured network as its GC or STATUS gets it: scoping keys stripped,
// runtimeConfig injected.
std::string configured_delegate_text(const cni::MetaConfig& config, const Attachment& a) {
  Json delegate = a.delegate;
  (void)strip_scoping_keys(delegate);  // the scoping keys never reach a delegate
  return cni::prepare_delegate(delegate, a.runtime_config, config.cni_version).dump();
}

// GC step 1: DEL (without a namespace) and forget every entry of this network whose container the
// runtime no longer lists. First-layout entries (no network recorded) are collected by any GC.
void collect_stale_entries(Session& s, const cni::Invocation& inv,
                           const std::set<std::pair<std::string, std::string>>& valid,
                           std::optional<CniError>& error) {
  for (const auto& key : s.cache->list()) {
    if (!key.legacy() && key.network != s.config.name) continue;
    auto lock = s.cache->lock(key.container_id);
    std::optional<store::ContainerRecord> record;
    try {
      record = s.cache->load(key);
    } catch (const CniError& e) {
      gc_unreadable_entry(s, inv, valid, key, e);
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
    auto failed = delete_attachments(*s.runner, gone, *record, "", error);
    if (failed.empty()) {
      forget_entry(*s.cache, key);
    } else {
      // Only deleted attachments leave the cache; the others stay for the next GC or DEL.
      util::log_error("GC: ", failed.size(), " network(s) of ", key.str(), " could not be deleted; keeping them cached");
      if (record->network.empty()) record->network = s.config.name;
      keep_failed(*s.cache, *record, std::move(failed));
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
    } catch (const CniError&) {
    }
  }
  return still;
}

}  // namespace

cni::Invocation invocation_for(const store::ContainerRecord& record) {
  cni::Invocation inv;
  inv.command = cni::Command::Del;
  inv.container_id = record.container_id;
  inv.ifname = record.ifname;
  inv.path = record.cni_path;
  inv.version = record.cni_version;
  return inv;
}

std::string Commands::add(const cni::Invocation& inv) {
  Session s = open_session(services_, inv);
  wait_for_readiness(services_, s.config, Readiness::Wait);
  KubeAccess kube(services_, s.config);
  auto pod = lookup_pod(kube, inv);
  auto attachments = resolve_attachments(services_, s, kube, inv, pod);
  auto plans = plan_attachments_scoping(s.config.scoping, attachments);  // strips the keys; a bad one is 7
  preflight_plugins(s, attachments);
  auto lock = s.cache->lock(inv.container_id);
  refuse_unreadable_entry(*s.cache, s.key);
  auto netns = services_.open_netns(inv.netns);
  IptablesRunnerPool iptables = iptables_pool(services_, inv.netns);
  ScopingEnv scoping{*netns, iptables};

  store::ContainerRecord record;
  record.container_id = inv.container_id;
  record.network = s.config.name;
  record.netns = inv.netns;
  record.ifname = inv.ifname;
  record.cni_version = inv.version;
  record.cni_path = inv.path;
  std::vector<cni::Result> results;  // results[i]: record.attachments[i]'s result, decoded once
  try {
    for (size_t i = 0; i < attachments.size(); ++i) {
      const auto& a = attachments[i];
      if (netns->find_link(a.ifname))
        throw CniError(ErrorCode::InterfaceExists,
                       "cannot attach network \"" + a.name + "\": interface name " + a.ifname +
                           " already exists in " + inv.netns);
      store::AttachmentRecord rec;
      rec.name = a.name;
      rec.ifname = a.ifname;
      rec.cluster_network = a.cluster_network;
      Json prepared = cni::prepare_delegate(a.delegate, a.runtime_config, s.config.cni_version);
      // The version its result is decoded in, taken before the dump instead of re-parsing rec.config.
      const std::string version = cni::delegate_version(prepared);
      rec.config = prepared.dump();
      rec.extra["cniArgs"] = attachment_cni_args(inv.args, a);
      if (!a.device_info_file.empty()) rec.extra["deviceInfoFile"] = a.device_info_file;
      if (Json st = initial_scoping_state(plans[i]); !st.is_null()) rec.extra["scoping"] = st;
      record.attachments.push_back(rec);
      s.cache->save(record);  // before the delegate runs, so a crash can still be cleaned up

      util::log_verbose("ADD network \"", a.name, "\" as ", a.ifname);
      if (util::Logger::instance().enabled(util::LogLevel::Debug))
        util::log_debug("delegate config of \"", a.name, "\": ", util::redacted_dump(Json::parse(rec.config)));
      std::string result = s.runner->add(rec.config, target_for(inv, inv.netns, rec));
      record.attachments.back().result = result;
      try {
        results.push_back(cni::decode_result_text(record.attachments.back().result, version));
      } catch (const CniError& e) {
        throw CniError(ErrorCode::DelegateFailed,
                       "network \"" + a.name + "\" returned an invalid result: " + e.msg());
      }
      s.cache->save(record);
      if (plans[i].active()) {
        auto& added = record.attachments.back();
        added.extra["scoping"] = apply_scoping(scoping, plans[i], results.back());
        if (Json fields = scoping_status_fields(added.extra["scoping"]); !fields.empty())
          added.extra["statusFields"] = fields;
        s.cache->save(record);
      }
    }
    std::vector<std::string> texts;
    for (const auto& a : record.attachments) texts.push_back(a.result);
    if (!apply_default_routes_to_record(scoping, plans, record).empty()) s.cache->save(record);
    for (size_t i = 0; i < record.attachments.size(); ++i)  // a moved default route rewrites a result
      if (record.attachments[i].result != texts[i]) results[i] = decode_attachment_result(record.attachments[i]);
    if (pod) publish_status(kube, *services_.files, s.config, inv, *pod, record, results);
    return render_result(record, results, inv.version, s.config.return_all_results);
  } catch (...) {
    if (record.attachments.empty()) throw;
    util::log_error("ADD failed, rolling back ", record.attachments.size(), " attachment(s)");
    roll_back(s, inv, record, record.attachments.back().result.empty(), &scoping);
    throw;
  }
}

std::string Commands::del(const cni::Invocation& inv) {
  Session s = open_session(services_, inv);
  wait_for_readiness(services_, s.config, Readiness::LookOnce);
  auto lock = s.cache->lock(inv.container_id);
  std::optional<store::ContainerRecord> record;
  try {
    record = s.cache->load(s.key);
  } catch (const CniError& e) {
    util::log_error("cache entry ", s.key.str(), " is unreadable (", e.msg(),
                    "); deleting the configured networks best-effort");
  }
  if (record) {
    if (const auto* bad = first_unusable(*record)) {
      util::log_error("cache entry ", s.key.str(), " is unreadable (the cached config of network \"",
                      bad->name, "\" (", bad->ifname, ") is not a delegate config); deleting the configured networks best-effort");
      record.reset();
    }
  }
  if (record && record->network.empty()) record->network = s.key.network;  // a first-layout entry moves on
  bool rebuilt = !record;
  if (!record) {
    // No usable cache: DEL what the config says would have been attached, so IPs are not leaked.
    // Without a record nothing proves the interfaces in the namespace are ours, so the delegates
    // get no CNI_NETNS: they release their IPAM and leave every link alone.
    record.emplace();
    record->container_id = inv.container_id;
    record->network = s.key.network;
    record->ifname = inv.ifname;
    record->netns = kNoNetns;
    try {
      std::vector<Attachment> attachments;
      try {
        KubeAccess kube(services_, s.config);
        auto pod = lookup_pod(kube, inv);
        attachments = resolve_attachments(services_, s, kube, inv, pod, Resolution::BestEffort);
      } catch (const CniError& e) {
        util::log_error("cannot resolve the pod's networks for DEL (", e.msg(), "); using the configured ones");
        attachments = resolve_static_attachments(s.config, inv);
      }
      record->attachments = rebuilt_attachments(s.config, attachments);
    } catch (const CniError& e) {
      util::log_error("cannot rebuild the networks of ", s.key.str(), ": ", e.msg());
    }
  }
  std::optional<CniError> error;
  // A rebuilt record's scoping is looked for in the runtime's namespace: found by our chain names
  // and by rules at our priority from the prevResult IPs, it can only be ours.
  auto scoping = open_scoping_for_del(services_, del_netns(rebuilt ? inv.netns : record->netns), *record);
  auto failed = delete_attachments(*s.runner, inv, *record, del_netns(record->netns), error, scoping ? &scoping->env : nullptr);
  if (rebuilt) {
    // Best effort: nothing proves these delegates were ever added, so their errors are only logged.
    if (error) util::log_error("best-effort DEL without a cache entry: ", error->msg());
    forget_entry(*s.cache, s.key);
    return "";
  }
  if (failed.empty() || !s.config.retry_delete_on_error) {
    forget_entry(*s.cache, s.key);
  } else {
    keep_failed(*s.cache, *record, std::move(failed));
  }
  if (error) throw *error;
  return "";
}

std::string Commands::check(const cni::Invocation& inv) {
  Session s = open_session(services_, inv);
  auto lock = s.cache->lock(inv.container_id);
  auto record = s.cache->load(s.key);
  if (!record || record->attachments.empty())
    throw CniError(ErrorCode::UnknownContainer, "no attachments are recorded for container " + inv.container_id +
                                                    " in network \"" + s.key.network + "\" (" + inv.ifname + ")");
  auto netns = services_.open_netns(inv.netns);
  IptablesRunnerPool iptables = iptables_pool(services_, inv.netns);
  ScopingEnv scoping{*netns, iptables};
  for (const auto& a : record->attachments) {
    if (a.result.empty())
      throw CniError(ErrorCode::CheckFailed, "network \"" + a.name + "\" was never completely added");
    check_interface(*netns, a);
    if (!s.runner->check(a.config, a.result, target_for(inv, inv.netns, a)))
      util::log_verbose("network \"", a.name, "\" is older than 0.4.0 and has no CHECK; checked its interface only");
    if (!a.extra.contains("scoping")) continue;
    std::string diffs;
    for (const auto& d : check_scoping(scoping, a.extra["scoping"])) diffs += (diffs.empty() ? "" : "; ") + d;
    if (!diffs.empty())
      throw CniError(ErrorCode::CheckFailed, "network \"" + a.name + "\" (" + a.ifname + "): " + diffs);
  }
  return "";
}

std::string Commands::gc(const cni::Invocation& inv) {
  Session s = open_session(services_, inv);
  auto valid = parse_valid_attachments(inv.config);
  wait_for_readiness(services_, s.config, Readiness::Wait);
  std::optional<CniError> error;
  collect_stale_entries(s, inv, valid, error);
  // Delegates that speak 1.1.0 get their own GC with the attachments that remain theirs. The cache
  // part above needs no API; resolving NAD-named networks does, and its failure is reported after.
  std::vector<Attachment> configured;
  try {
    configured = configured_attachments(services_, s, inv);
  } catch (const CniError& e) {
    util::log_error("GC: cannot resolve the configured networks for their own GC: ", e.msg());
    if (!error) error = e;
  }
  for (const auto& a : configured) {
    try {
      s.runner->gc(configured_delegate_text(s.config, a), remaining_attachments_of(*s.cache, s.config.name, a.name),
                   inv.path);
    } catch (const CniError& e) {
      if (!error) error = e;
    }
  }
  if (error) throw *error;
  return "";
}

std::string Commands::status(const cni::Invocation& inv) {
  Session s = open_session(services_, inv);
  wait_for_readiness(services_, s.config, Readiness::Wait);
  std::vector<Attachment> configured;
  try {
    configured = configured_attachments(services_, s, inv);
  } catch (const k8s::ApiError& e) {
    // The cluster network is a NAD and the API cannot say what it is: an unreachable API server
    // does not make the node's pod network unready (ADD of pods without it may still work, and the
    // runtime would otherwise stop scheduling); readiness is the cluster delegate's to report.
    util::log_warning("STATUS: cannot resolve the cluster network through the Kubernetes API (", e.msg(),
                      "); reporting ready without asking its delegate");
    return "";
  }
  const Attachment& cluster = configured.front();
  if (!s.runner->status(configured_delegate_text(s.config, cluster), inv.path))
    util::log_verbose("cluster network \"", cluster.name, "\" predates STATUS; reporting ready");
  return "";
}

Services real_services(exec::ProcessRunner& runner) {
  Services s;
  s.runner = &runner;
  s.open_cache = [](const std::string& dir) -> std::unique_ptr<store::Cache> {
    return std::make_unique<store::FileCache>(dir);
  };
  s.open_netns = [](const std::string& path) -> std::unique_ptr<netlink::NetOps> {
    return std::make_unique<netlink::RealNetOps>(path);
  };
  s.open_iptables = [](const std::string& netns, int wait) -> std::unique_ptr<firewall::IptablesRunner> {
    firewall::RealIptablesRunner::Options options;
    options.netns_path = netns;
    options.lock_wait_seconds = wait;
    return std::make_unique<firewall::RealIptablesRunner>(options);
  };
  s.file_exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  s.files = std::make_shared<util::RealFileReader>();
  s.find_auth = [files = s.files](const std::string& kubeconfig) {
    util::ProcessEnv env;
    return k8s::find_cluster_auth(kubeconfig, env, *files);
  };
  s.open_transport = [](const k8s::ClusterAuth& auth) -> std::unique_ptr<k8s::HttpTransport> {
    return std::make_unique<k8s::BeastTransport>(auth);
  };
  s.k8s_sleeper = std::make_shared<k8s::ThreadSleeper>();
  s.k8s_clock = std::make_shared<k8s::SteadyClock>();
  s.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  for (char** e = environ; e && *e; ++e) s.environment.emplace_back(*e);
  return s;
}

}  // namespace manifold::plugin
