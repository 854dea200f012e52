// The policy rules' lifecycle: apply with per-family rollback, re-apply when changed, remove from
// saved text with one retry, check against the generated chains, and the cached state's codec.
#include "policy/enforce.h"

#include <algorithm>

#include "cni/error.h"
#include "firewall/owned_chains.h"
#include "policy/rule_builder.h"
#include "util/ifname.h"
#include "util/log.h"

namespace manifold::policy {

using firewall::Backend;
using firewall::Family;
using firewall::IptablesRunner;
using firewall::Table;

namespace {

[[noreturn]] void bad_state(const std::string& field, const std::string& why) {
  throw cni::CniError(cni::ErrorCode::Decoding, "invalid cached policy state: " + field + " " + why);
}

std::string where(const std::string& ifname, Family family, Backend backend) {
  return ifname + " (" + std::string(firewall::family_name(family)) + ", " +
         std::string(firewall::backend_name(backend)) + ")";
}

// Removes our chains of one family and backend. With `tolerate_save_failure`, a save that fails
// (this backend unusable here) counts as "nothing of ours".
void remove_family(IptablesRunner& runner, const std::string& ifname, Family family, Backend backend,
                   bool tolerate_save_failure) {
  const std::vector<std::string> names = policy_chain_names(ifname);
  std::string saved;
  try {
    saved = runner.save(family, backend, Table::Filter);
  } catch (const cni::CniError& e) {
    if (!tolerate_save_failure) throw;
    util::log_debug("policy: skipping ", where(ifname, family, backend), ": ", e.msg());
    return;
  }
  std::string payload = firewall::build_chains_removal(Table::Filter, names, saved);
  if (payload.empty()) return;
  try {
    runner.restore(family, backend, payload);
  } catch (const cni::CniError& e) {
    util::log_warning("policy: removing the rules of ", where(ifname, family, backend),
                      " failed, re-reading the table and retrying once: ", e.msg());
    payload = firewall::build_chains_removal(Table::Filter, names, runner.save(family, backend, Table::Filter));
    if (payload.empty()) return;
    runner.restore(family, backend, payload);
  }
  util::log_verbose("policy: removed the rules of ", where(ifname, family, backend));
}

Family family_of(const Json& value) {
  if (value == 4) return Family::V4;
  if (value == 6) return Family::V6;
  bad_state("families", "holds something other than 4 or 6");
}

}  // namespace

Json PolicyState::to_json() const {
  Json j = Json::object();
  j["ifname"] = ifname;
  j["network"] = network;
  j["backend"] = backend ? Json(std::string(firewall::backend_name(*backend))) : Json(nullptr);
  j["families"] = Json::array();
  for (Family f : families) j["families"].push_back(static_cast<int>(f));
  j["lockWaitSeconds"] = lock_wait_seconds;
  j["applied"] = applied;
  j["complete"] = complete;
  return j;
}

PolicyState PolicyState::from_json(const Json& j) {
  if (!j.is_object()) bad_state("(top level)", "is not an object");
  PolicyState s;
  const Json* ifname = json_at(j, {"ifname"});
  if (ifname == nullptr || !ifname->is_string() || !util::is_valid_ifname(ifname->get_ref<const std::string&>()))
    bad_state("ifname", "is missing or not a valid interface name");
  s.ifname = ifname->get<std::string>();
  const Json* network = json_at(j, {"network"});
  if (network == nullptr || !network->is_string() || network->get_ref<const std::string&>().size() > 512)
    bad_state("network", "is missing or not a network name");
  s.network = network->get<std::string>();
  if (const Json* b = json_at(j, {"backend"}); b != nullptr && !b->is_null()) {
    if (!b->is_string() || !firewall::parse_backend(b->get_ref<const std::string&>()))
      bad_state("backend", "is not \"legacy\", \"nft\" or null");
    s.backend = firewall::parse_backend(b->get_ref<const std::string&>());
  }
  const Json* families = json_at(j, {"families"});
  if (families == nullptr || !families->is_array() || families->size() > 2)
    bad_state("families", "is missing or not a list of at most two families");
  for (const Json& f : *families) {
    const Family family = family_of(f);
    if (std::find(s.families.begin(), s.families.end(), family) != s.families.end())
      bad_state("families", "lists a family twice");
    s.families.push_back(family);
  }
  const Json* wait = json_at(j, {"lockWaitSeconds"});
  if (wait == nullptr || !wait->is_number_integer() || wait->get<long long>() < 1 || wait->get<long long>() > 600)
    bad_state("lockWaitSeconds", "is not a number of seconds (1-600)");
  s.lock_wait_seconds = wait->get<int>();
  const Json* applied = json_at(j, {"applied"});
  const Json* complete = json_at(j, {"complete"});
  if (applied == nullptr || !applied->is_boolean()) bad_state("applied", "is not a boolean");
  if (complete == nullptr || !complete->is_boolean()) bad_state("complete", "is not a boolean");
  s.applied = applied->get<bool>();
  s.complete = complete->get<bool>();
  if (s.applied && !s.backend) bad_state("backend", "is null although the rules were applied");
  return s;
}

PolicyState PolicyState::planned(std::string ifname, std::string network, std::vector<Family> families,
                                 int lock_wait_seconds) {
  firewall::validate_ifname(ifname);
  PolicyState s;
  s.ifname = std::move(ifname);
  s.network = std::move(network);
  s.families = std::move(families);
  s.lock_wait_seconds = lock_wait_seconds;
  return s;
}

PolicyState apply_policy(IptablesRunner& runner, PolicyState state, const AttachmentRules& rules,
                         const PolicyConfig& cfg) {
  firewall::validate_ifname(state.ifname);
  const std::optional<Backend> forced = cfg.forced_backend();
  const Backend backend = forced ? *forced : runner.detect();
  std::vector<Family> done;
  for (Family family : state.families) {
    try {
      const std::string saved = runner.save(family, backend, Table::Filter);
      runner.restore(family, backend, build_policy_payload(state.ifname, rules, family, cfg.deny, saved));
      done.push_back(family);
    } catch (const cni::CniError& e) {
      util::log_verbose("policy: installing the rules of ", where(state.ifname, family, backend), " failed: ", e.msg());
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        try {
          remove_family(runner, state.ifname, *it, backend, false);
        } catch (const cni::CniError& undo) {
          util::log_error("policy: rolling back the rules of ", where(state.ifname, *it, backend),
                          " failed: ", undo.msg());
        }
      }
      throw;
    }
  }
  state.backend = backend;
  state.applied = true;
  state.complete = rules.complete();
  util::log_verbose("policy: installed the rules of ", state.ifname, " with ", firewall::backend_name(backend),
                    rules.complete() ? "" : " (peers not known yet: what needs them is denied)");
  return state;
}

int apply_policy_if_changed(IptablesRunner& runner, PolicyState& state, const AttachmentRules& rules,
                            const PolicyConfig& cfg) {
  if (!state.applied || !state.backend) {
    state = apply_policy(runner, state, rules, cfg);
    return static_cast<int>(state.families.size());
  }
  const std::vector<std::string> names = policy_chain_names(state.ifname);
  int restored = 0;
  for (Family family : state.families) {
    const std::string saved = runner.save(family, *state.backend, Table::Filter);
    const auto chains = policy_chains(state.ifname, rules, family, cfg.deny);
    if (firewall::compare_chains(Table::Filter, names, chains, saved, "").empty()) continue;
    runner.restore(family, *state.backend, build_policy_payload(state.ifname, rules, family, cfg.deny, saved));
    ++restored;
  }
  state.complete = rules.complete();
  return restored;
}

void remove_policy(IptablesRunner& runner, const PolicyState& state) {
  firewall::validate_ifname(state.ifname);
  for (Family family : state.families) {
    if (state.backend) {
      remove_family(runner, state.ifname, family, *state.backend, false);
      continue;
    }
    for (Backend backend : {Backend::Legacy, Backend::Nft})
      if (runner.available(family, backend)) remove_family(runner, state.ifname, family, backend, true);
  }
}

std::vector<std::string> check_policy(IptablesRunner& runner, const PolicyState& state, const AttachmentRules& expected,
                                      DenyAction deny) {
  firewall::validate_ifname(state.ifname);
  std::vector<std::string> diffs;
  if (!state.applied || !state.backend) {
    if (expected.covered()) diffs.push_back("the policy rules of " + state.ifname + " were never completely applied");
    return diffs;
  }
  const std::vector<std::string> names = policy_chain_names(state.ifname);
  for (Family family : state.families) {
    const auto chains = policy_chains(state.ifname, expected, family, deny);
    const std::string saved = runner.save(family, *state.backend, Table::Filter);
    for (std::string& d :
         firewall::compare_chains(Table::Filter, names, chains, saved, "no policy isolates its direction"))
      diffs.push_back(std::string(firewall::family_name(family)) + ": " + d);
  }
  return diffs;
}

}  // namespace manifold::policy
