// Implementation of detaching: per-attachment DEL with scoping removal, the entry's bookkeeping,
// and the CNI DEL of an entry, cached or rebuilt.
#include "engine/detach.h"

#include <filesystem>

#include "cni/delegate_config.h"
#include "cni/result_codec.h"
#include "engine/cached.h"
#include "engine/devices.h"
#include "engine/entry_state.h"
#include "engine/kube_access.h"
#include "engine/multus_cache.h"
#include "engine/plan.h"
#include "engine/pod_networks.h"
#include "engine/policy_step.h"
#include "netlink/netns.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;

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
    plain.cni_args = nullptr;
    return target_for(inv, netns, plain);
  }
}

// Removes an attachment's network scoping before its delegate's DEL. Its own result, else the
// runtime's prevResult, names its IPs for the case that the applied state was never cached.
void remove_attachment_scoping(scoping::ScopingEnv& env, const cni::Invocation& inv, const store::AttachmentRecord& a) {
  std::optional<cni::Result> prev;
  try {
    if (!a.result.empty())
      prev = cni::decode_result_text(a.result, cni::delegate_version(Json::parse(a.config)));
    else if (inv.config.contains("prevResult"))
      prev = cni::decode_result(inv.config["prevResult"], inv.version);
  } catch (const std::exception& e) {
    util::log_verbose("no usable result for the scoping DEL of ", a.ifname, ": ", e.what());
  }
  scoping::remove_scoping(env, a.scoping, a.ifname, prev ? &*prev : nullptr);
}

// Scoping for DEL in `netns`, or nothing when the namespace is gone (our rules died with it) or no
// attachment of `record` has scoping state.
std::unique_ptr<ScopingSession> open_scoping_for_del(const Services& services, const std::string& netns,
                                                     const store::ContainerRecord& record) {
  bool any = false;
  for (const auto& a : record.attachments) any = any || !a.scoping.is_null() || !a.policy.is_null();
  if (!any || netns.empty()) return nullptr;
  try {
    return std::make_unique<ScopingSession>(services, netns);
  } catch (const netlink::NetnsNotFound&) {
    return nullptr;
  } catch (const CniError& e) {
    util::log_warning("cannot open ", netns, " to remove network scoping: ", e.msg());
    return nullptr;
  }
}

// The first attachment of `record` whose cached delegate config cannot be replayed, or null.
const store::AttachmentRecord* first_unusable(const store::ContainerRecord& record) {
  for (const auto& a : record.attachments)
    if (!has_usable_config(a)) return &a;
  return nullptr;
}

// The call's entry, when it can be replayed; nullopt (logged) when it is missing or unreadable.
std::optional<store::ContainerRecord> usable_entry(Session& session) {
  std::optional<store::ContainerRecord> record;
  try {
    record = session.cache->load(session.key);
  } catch (const CniError& e) {
    util::log_error("cache entry ", session.key.str(), " is unreadable (", e.msg(),
                    "); deleting the configured networks best-effort");
  }
  if (record) {
    if (const auto* bad = first_unusable(*record)) {
      util::log_error("cache entry ", session.key.str(), " is unreadable (the cached config of network \"", bad->name,
                      "\" (", bad->ifname, ") is not a delegate config); deleting the configured networks best-effort");
      record.reset();
    }
  }
  if (record && record->network.empty()) record->network = session.key.network;  // a first-layout entry moves on
  return record;
}

// No usable cache: what the config says would have been attached, so IPs are not leaked. Without a
// record nothing proves the interfaces in the namespace are ours, so the delegates get no
// CNI_NETNS: they release their IPAM and leave every link alone.
store::ContainerRecord rebuilt_entry(const Services& services, Session& session, const cni::Invocation& inv) {
  store::ContainerRecord record;
  record.container_id = inv.container_id;
  record.network = session.key.network;
  record.ifname = inv.ifname;
  record.netns = kNoNetns;
  try {
    std::vector<Attachment> attachments;
    try {
      KubeAccess kube(services, session.config);
      auto pod = lookup_pod(kube, inv);
      attachments = resolve_attachments(services, session, kube, inv, pod, Resolution::BestEffort);
    } catch (const PodNotFound& e) {
      util::log_verbose(e.msg(), ": DEL releases the configured networks");
      attachments = resolve_static_attachments(session.config, inv);
    } catch (const CniError& e) {
      util::log_error("cannot resolve the pod's networks for DEL (", e.msg(), "); using the configured ones");
      attachments = resolve_static_attachments(session.config, inv);
    }
    record.attachments = rebuilt_attachments(session.config, attachments);
  } catch (const CniError& e) {
    util::log_error("cannot rebuild the networks of ", session.key.str(), ": ", e.msg());
  }
  return record;
}

// A container Multus attached before the node moved to manifold: each of its delegates gets the DEL
// Multus would have given it, from what Multus cached, in the runtime's namespace (the cache proves
// the interfaces are those delegates'). Multus's files go as its own DEL removes them: always, or
// with `retryDeleteOnError` only once every DEL succeeded. False when Multus cached nothing for it.
bool detach_multus_entry(const Services& services, Session& session, const cni::Invocation& inv) {
  std::optional<MultusEntry> entry;
  try {
    entry = read_multus_entry(services, session.config.multus_cni_dir, inv, session.config.device_info_dir);
  } catch (const CniError& e) {
    // It can never be replayed: it goes, and the configured networks are released best-effort.
    util::log_error(e.msg(), "; removing it and deleting the configured networks best-effort");
    if (e.code() == static_cast<unsigned>(cni::ErrorCode::Decoding)) {  // not for an ID that is no file name
      MultusEntry unusable;
      unusable.scratch_file = session.config.multus_cni_dir + "/" + inv.container_id;
      remove_multus_entry(services, unusable);
    }
    return false;
  }
  if (!entry) return false;
  util::log_verbose("container ", inv.container_id, " was attached by Multus: DEL of its ",
                    entry->record.attachments.size(), " networks from ", entry->scratch_file);
  std::optional<CniError> error;
  auto failed = delete_attachments(session, inv, entry->record, del_netns(inv.netns), error);
  if (failed.empty() || !session.config.retry_delete_on_error) remove_multus_entry(services, *entry);
  if (error) throw *error;
  return true;
}

}  // namespace

std::string del_netns(const std::string& netns) {
  if (netns.empty() || netns == kNoNetns) return std::string();
  std::error_code ec;
  return std::filesystem::exists(netns, ec) ? netns : std::string();
}

scoping::IptablesRunnerPool iptables_pool(const Services& services, const std::string& netns) {
  if (!services.open_iptables) return scoping::IptablesRunnerPool::real(netns);
  return scoping::IptablesRunnerPool([&services, netns](int wait) { return services.open_iptables(netns, wait); });
}

ScopingSession::ScopingSession(const Services& services, const std::string& netns)
    : net(services.open_netns(netns)), iptables(iptables_pool(services, netns)), env{*net, iptables} {}

void forget_entry(store::Cache& cache, const store::EntryKey& key) {
  try {
    cache.remove(key);
  } catch (const CniError& e) {
    util::log_error("cannot remove the cache entry of container ", key.container_id, " in network \"", key.network,
                    "\" on ", key.ifname, " (", e.msg(), "); its networks were deleted, the next DEL or GC removes it");
  }
}

void mark_deleting(store::Cache& cache, store::ContainerRecord& record) {
  if (entry_state(record) == EntryState::Deleting) return;
  set_entry_state(record, EntryState::Deleting);
  try {
    cache.mark_state(record);  // in place: the DEL removes or rewrites the entry anyway
  } catch (const CniError& e) {
    util::log_error("cannot record that the DEL of ", record.key().str(), " began (", e.msg(), "); deleting anyway");
  }
}

void keep_failed(store::Cache& cache, store::ContainerRecord record, std::vector<store::AttachmentRecord> failed) {
  record.attachments = std::move(failed);
  try {
    cache.save(record);
  } catch (const CniError& e) {
    util::log_error("cannot record the failed deletions of container ", record.container_id, ": ", e.msg());
  }
}

std::vector<store::AttachmentRecord> delete_attachments(Session& session, const cni::Invocation& inv,
                                                        const store::ContainerRecord& record, const std::string& netns,
                                                        std::optional<CniError>& first_error,
                                                        scoping::ScopingEnv* scoping,
                                                        std::vector<store::AttachmentRecord>* scoping_left) {
  std::vector<store::AttachmentRecord> failed;
  auto note = [&](const store::AttachmentRecord& a, const std::string& what, const CniError& e) {
    std::string msg = what + " \"" + a.name + "\" (" + a.ifname + ") failed: " + e.msg();
    util::log_error(msg);
    if (!first_error) first_error = CniError(e.code(), msg, e.details());
  };
  for (size_t i = record.attachments.size(); i-- > 0;) {
    const auto& a = record.attachments[i];
    if (!a.delegate_started) {  // recorded by an ADD that was killed before it ran this delegate
      util::log_verbose("network \"", a.name, "\" (", a.ifname, ") was never started: nothing to delete");
      continue;
    }
    bool ok = true;
    bool left = false;  // some rules of ours could not be removed: the attachment stays recorded
    try {
      if (scoping && !a.scoping.is_null()) remove_attachment_scoping(*scoping, inv, a);
    } catch (const CniError& e) {
      note(a, "removing the network scoping of", e);
      left = true;
    }
    try {
      if (scoping && !a.policy.is_null()) remove_attachment_policy(*scoping, a.policy);
    } catch (const CniError& e) {
      note(a, "removing the MultiNetworkPolicy rules of", e);
      left = true;
    }
    if (left) {
      if (scoping_left) scoping_left->insert(scoping_left->begin(), a);
      ok = false;
    }
    try {
      session.runner->del(a.config, a.result, del_target_for(inv, netns, a));
    } catch (const CniError& e) {
      note(a, "DEL of network", e);
      ok = false;
    }
    remove_device_info(session.file_writer.get(), a.device_info_file);
    if (!ok) failed.insert(failed.begin(), a);
  }
  return failed;
}

cni::Invocation invocation_for(const store::ContainerRecord& record) {
  cni::Invocation inv;
  inv.command = cni::Command::Del;
  inv.container_id = record.container_id;
  inv.ifname = record.ifname;
  inv.path = record.cni_path;
  inv.version = record.cni_version;
  return inv;
}

void detach_entry(const Services& services, Session& session, const cni::Invocation& inv) {
  std::optional<store::ContainerRecord> record = usable_entry(session);
  if (!record && detach_multus_entry(services, session, inv)) return;
  const bool rebuilt = !record;
  if (rebuilt) record = rebuilt_entry(services, session, inv);
  if (!rebuilt) mark_deleting(*session.cache, *record);
  std::optional<CniError> error;
  std::vector<store::AttachmentRecord> scoping_left;
  // A rebuilt record's scoping is looked for in the runtime's namespace: found by our chain names
  // and by rules at our priority from the prevResult IPs, it can only be ours.
  auto scoping = open_scoping_for_del(services, del_netns(rebuilt ? inv.netns : record->netns), *record);
  auto failed = delete_attachments(session, inv, *record, del_netns(record->netns), error,
                                   scoping ? &scoping->env : nullptr, &scoping_left);
  if (rebuilt) {
    // Best effort: nothing proves these delegates were ever added, so their errors are only logged.
    if (error) util::log_error("best-effort DEL without a cache entry: ", error->msg());
    forget_entry(*session.cache, session.key);
    return;
  }
  if (!session.config.retry_delete_on_error) failed = std::move(scoping_left);
  if (failed.empty()) {
    forget_entry(*session.cache, session.key);
  } else {
    keep_failed(*session.cache, *record, std::move(failed));
  }
  if (error) throw *error;
}

}  // namespace manifold::engine
