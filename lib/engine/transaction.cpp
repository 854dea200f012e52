// Implementation of the attach transaction: record, run, record the result, scope, record; the
// default-route step; and the exact rollback.
#include "engine/transaction.h"

#include "cni/error.h"
#include "cni/result_codec.h"
#include "engine/cached.h"
#include "engine/detach.h"
#include "engine/devices.h"
#include "engine/entry_state.h"
#include "engine/plan.h"
#include "util/log.h"
#include "util/log_file.h"

namespace manifold::engine {

namespace {

using cni::CniError;
using cni::ErrorCode;

}  // namespace

void refuse_unreadable_entry(store::Cache& cache, const store::EntryKey& key) {
  try {
    cache.load(key);
  } catch (const CniError& e) {
    throw CniError(e.code(), "cannot ADD container " + key.container_id + " to network \"" + key.network +
                                 "\": its cache entry is unreadable (" + e.msg() +
                                 "); DEL the container first, which releases what it can and removes it");
  }
}

store::ContainerRecord new_entry(const Session& session, const cni::Invocation& inv) {
  store::ContainerRecord record;
  record.container_id = inv.container_id;
  record.network = session.config.name;
  record.netns = inv.netns;
  record.ifname = inv.ifname;
  record.cni_version = inv.version;
  record.cni_path = inv.path;
  record_invocation(record, inv);
  set_entry_state(record, EntryState::Adding);
  return record;
}

std::vector<scoping::DefaultRouteChange> apply_default_routes_to_record(scoping::ScopingEnv& env,
                                                                        const std::vector<scoping::ScopingPlan>& plans,
                                                                        store::ContainerRecord& record) {
  const std::vector<scoping::DefaultRouteRequest> requests = scoping::default_route_requests(plans);
  if (requests.empty()) return {};
  std::vector<cni::Result> results;
  for (const store::AttachmentRecord& a : record.attachments) results.push_back(decode_attachment_result(a));
  std::vector<std::pair<std::string, cni::Result*>> targets;
  for (std::size_t i = 0; i < results.size(); ++i) targets.emplace_back(record.attachments[i].ifname, &results[i]);
  const std::vector<cni::Result> before = results;
  std::vector<scoping::DefaultRouteChange> changes = scoping::apply_default_route_step(env, requests, targets);
  for (std::size_t i = 0; i < results.size(); ++i)  // unchanged results keep their exact bytes
    if (results[i] != before[i])
      record.attachments[i].result = cni::encode_result(results[i], results[i].cni_version).dump();
  return changes;
}

AttachTransaction::AttachTransaction(const Services& services, Session& session, const cni::Invocation& inv,
                                     store::ContainerRecord entry)
    : services_(services),
      session_(session),
      inv_(inv),
      netns_(services.open_netns(inv.netns)),
      iptables_(iptables_pool(services, inv.netns)),
      env_{*netns_, iptables_},
      record_(std::move(entry)),
      first_new_(record_.attachments.size()),
      started_(first_new_) {
  for (const auto& a : record_.attachments) results_.push_back(decode_attachment_result(a));
}

AttachTransaction::~AttachTransaction() {
  if (!committed_) roll_back();
}

void AttachTransaction::save() {
  session_.cache->save(record_);
  unsaved_ = false;
}

void AttachTransaction::flush() {
  if (unsaved_) save();
}

void AttachTransaction::refuse_taken_ifname(const Attachment& a) {
  if (netns_->find_link(a.ifname))
    throw CniError(ErrorCode::InterfaceExists, "cannot attach network \"" + a.name + "\": interface name " + a.ifname +
                                                   " already exists in " + inv_.netns);
}

void AttachTransaction::attach_all(const std::vector<Attachment>& as, const std::vector<scoping::ScopingPlan>& plans,
                                   const PolicyPlan* policy) {
  if (as.empty()) return;
  for (const Attachment& a : as) refuse_taken_ifname(a);
  const std::size_t base = record_.attachments.size();
  std::vector<std::string> versions(as.size());
  for (std::size_t i = 0; i < as.size(); ++i) {
    record_.attachments.push_back(planned_record(session_.config, inv_, as[i], plans[i], versions[i]));
    record_.attachments.back().delegate_started = i == 0;  // the first starts right after the write
    if (policy != nullptr && policy->attachments.at(i))
      record_.attachments.back().policy = policy->attachments[i]->state.to_json();
  }
  save();  // every attachment recorded before the first delegate runs, so a crash can be cleaned up
  for (std::size_t i = 0; i < as.size(); ++i) {
    // An earlier delegate of this transaction may have created the name (checked above for the first).
    if (i != 0) refuse_taken_ifname(as[i]);
    run_attachment(as[i], plans[i], versions[i], base + i, policy, i);
  }
}

void AttachTransaction::run_attachment(const Attachment& a, const scoping::ScopingPlan& plan,
                                       const std::string& version, std::size_t index, const PolicyPlan* policy,
                                       std::size_t policy_index) {
  store::AttachmentRecord& added = record_.attachments[index];
  if (!added.delegate_started) {  // from here on the runtime's DEL (after a kill) runs its DEL
    added.delegate_started = true;
    if (session_.cache->mark_started(record_, index + 1)) unsaved_ = false;
  }
  started_ = index + 1;  // from here on a rollback runs this attachment's DEL
  // The policy rules go in before the delegate creates the interface, so it never exists without
  // them; the applied state reaches the entry with the next save (until then the planned one
  // already names the chains for a DEL).
  if (policy != nullptr && policy->attachments.at(policy_index)) {
    added.policy = apply_attachment_policy(env_, *policy->attachments[policy_index], policy->config);
    unsaved_ = true;
  }
  copy_device_info(services_, session_.config, a);

  util::log_verbose("ADD network \"", a.name, "\" as ", a.ifname);
  if (util::Logger::instance().enabled(util::LogLevel::Debug))
    util::log_debug("delegate config of \"", a.name, "\": ", util::redacted_dump(Json::parse(added.config)));
  added.result = session_.runner->add(added.config, target_for(inv_, inv_.netns, added));
  try {
    results_.push_back(cni::decode_result_text(added.result, version));
  } catch (const CniError& e) {
    throw CniError(ErrorCode::DelegateFailed, "network \"" + a.name + "\" returned an invalid result: " + e.msg());
  }
  unsaved_ = true;  // written by the next save, before anything else happens (see transaction.h)
  if (!plan.active()) return;
  save();
  added.scoping = scoping::apply_scoping(env_, plan, results_.back());
  if (Json fields = scoping::scoping_status_fields(added.scoping); !fields.empty()) added.status_fields = fields;
  save();
}

void AttachTransaction::mark_complete() {
  set_entry_state(record_, EntryState::Complete);
  // The namespace the ADD worked in, so that a hot-plug can refuse a path that names another now.
  // Without it the agent refuses hot-plugs into a /proc/<pid>/ns/net path: the ADD itself succeeded.
  try {
    if (services_.netns_identity)
      if (auto identity = services_.netns_identity(inv_.netns)) record_netns_identity(record_, *identity);
  } catch (const CniError& e) {
    util::log_warning("cannot record the identity of network namespace ", inv_.netns, ": ", e.msg());
  }
  save();
}

void AttachTransaction::apply_default_routes(const std::vector<scoping::ScopingPlan>& plans) {
  if (scoping::default_route_requests(plans).empty()) return;
  flush();  // the results before the routes move
  std::vector<std::string> texts;
  for (const auto& a : record_.attachments) texts.push_back(a.result);
  route_changes_ = apply_default_routes_to_record(env_, plans, record_);
  if (route_changes_.empty()) return;
  save();
  for (std::size_t i = 0; i < record_.attachments.size(); ++i)  // a moved default route rewrote a result
    if (record_.attachments[i].result != texts[i]) results_[i] = decode_attachment_result(record_.attachments[i]);
}

// Undoes what this transaction did. The last attachment may be the one whose ADD failed; its DEL is
// attempted but a failure there is only logged (a plugin cleans up after its own failed ADD).
void AttachTransaction::roll_back() noexcept {
  // attach_all() starts the first delegate right after the write that records every attachment:
  // when none started, that write failed and nothing of this transaction is on disk or done.
  if (started_ == first_new_) return;
  record_.attachments.resize(started_);  // the ones whose delegate never ran are only forgotten
  try {
    flush();  // a result not on disk yet is written before the DELs, for a crash during them
  } catch (const std::exception& e) {
    util::log_error("cannot record the last result before rolling back: ", e.what());
  }
  try {
    util::log_error("ADD failed, rolling back ", record_.attachments.size() - first_new_, " attachment(s)");
    scoping::undo_default_routes(*netns_, route_changes_);
    const bool last_failed = record_.attachments.back().result.empty();
    store::ContainerRecord added = record_;
    added.attachments.erase(added.attachments.begin(), added.attachments.begin() + static_cast<long>(first_new_));
    std::optional<CniError> error;
    auto failed = delete_attachments(session_, inv_, added, del_netns(record_.netns), error, &env_);
    if (last_failed && !failed.empty() && failed.back().ifname == added.attachments.back().ifname) failed.pop_back();
    // The ADD's own error is what the caller must see: cache trouble here is only logged.
    std::vector<store::AttachmentRecord> kept(record_.attachments.begin(),
                                              record_.attachments.begin() + static_cast<long>(first_new_));
    kept.insert(kept.end(), failed.begin(), failed.end());
    if (kept.empty()) {
      forget_entry(*session_.cache, record_.key());
    } else {
      keep_failed(*session_.cache, record_, std::move(kept));
    }
  } catch (const std::exception& e) {
    util::log_error("rolling back the ADD of ", record_.key().str(), " failed: ", e.what());
  }
}

}  // namespace manifold::engine
