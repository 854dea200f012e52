// The mesh lifecycle: apply with per-family rollback, remove from saved text with one retry, check
// against the generated chains, and the MeshState cache codec (strict, bounded: the cache is input).
#include "scoping/mesh.h"

#include <algorithm>

#include "cni/error.h"
#include "scoping/cached_state.h"
#include "firewall/rules.h"
#include "firewall/save_text.h"
#include "util/log.h"
#include "util/ifname.h"

namespace manifold::scoping {

using namespace firewall;  // the layer these steps drive

namespace {

constexpr std::size_t kMaxPayloadBytes = 1024 * 1024;  // a cached payload larger than this is corrupt

std::optional<Family> family_from_number(long long n) {
  if (n == 4) return Family::V4;
  if (n == 6) return Family::V6;
  return std::nullopt;
}

// Removes our rules for one family and backend. Returns true when something was removed.
// With `tolerate_save_failure`, a failing save (backend unusable here) counts as "nothing ours".
bool remove_family(IptablesRunner& runner, const std::string& ifname, Family family, Backend backend,
                   bool tolerate_save_failure) {
  std::string current;
  try {
    current = runner.save(family, backend, Table::Nat);
  } catch (const cni::CniError& e) {
    if (!tolerate_save_failure) throw;
    util::log_debug("firewall: skipping ", family_name(family), " ", backend_name(backend), " for ", ifname, ": ",
                    e.msg());
    return false;
  }
  std::string payload = build_del_payload(current, ifname);
  if (payload.empty()) return false;
  try {
    runner.restore(family, backend, payload);
  } catch (const cni::CniError& e) {
    util::log_warning("firewall: removing mesh rules of ", ifname, " (", family_name(family), ", ",
                      backend_name(backend), ") failed, re-reading the table and retrying once: ", e.msg());
    payload = build_del_payload(runner.save(family, backend, Table::Nat), ifname);
    if (payload.empty()) return false;
    runner.restore(family, backend, payload);
  }
  util::log_verbose("firewall: removed mesh rules of ", ifname, " (", family_name(family), ", ", backend_name(backend),
                    ")");
  return true;
}

std::vector<Family> unique_families(const std::vector<Family>& families) {
  std::vector<Family> out;
  for (Family f : families)
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

}  // namespace

Json MeshState::to_json() const {
  Json j = Json::object();
  j["ifname"] = ifname;
  j["backend"] = backend ? Json(std::string(backend_name(*backend))) : Json(nullptr);
  j["families"] = Json::array();
  for (Family f : families) j["families"].push_back(static_cast<int>(f));
  j["chains"] = chains;
  j["payloads"] = Json::object();
  for (const auto& [family, payload] : payloads) j["payloads"][std::to_string(static_cast<int>(family))] = payload;
  j["lockWaitSeconds"] = lock_wait_seconds;
  return j;
}

MeshState MeshState::from_json(const Json& j) {
  if (!j.is_object()) throw_bad_cached_state("mesh", "(top level)", "is not an object");
  MeshState s;
  auto ifname = j.find("ifname");
  if (ifname == j.end() || !ifname->is_string() || !util::is_valid_ifname(ifname->get_ref<const std::string&>()))
    throw_bad_cached_state("mesh", "ifname", "is missing or not a valid interface name");
  s.ifname = ifname->get<std::string>();

  if (auto b = j.find("backend"); b != j.end() && !b->is_null()) {
    if (!b->is_string() || !parse_backend(b->get_ref<const std::string&>()))
      throw_bad_cached_state("mesh", "backend", "is not \"legacy\", \"nft\" or null");
    s.backend = parse_backend(b->get_ref<const std::string&>());
  }

  auto families = j.find("families");
  if (families == j.end() || !families->is_array() || families->size() > 2)
    throw_bad_cached_state("mesh", "families", "is missing or not a list of at most two families");
  for (const Json& f : *families) {
    const auto family = f.is_number_integer() ? family_from_number(f.get<long long>()) : std::nullopt;
    if (!family) throw_bad_cached_state("mesh", "families", "holds something other than 4 or 6");
    if (std::find(s.families.begin(), s.families.end(), *family) != s.families.end())
      throw_bad_cached_state("mesh", "families", "lists a family twice");
    s.families.push_back(*family);
  }

  if (auto chains = j.find("chains"); chains != j.end()) {
    if (!chains->is_array() || chains->size() > 2)
      throw_bad_cached_state("mesh", "chains", "is not a list of at most two names");
    const std::string in = inbound_chain_name(s.ifname);
    const std::string out = outbound_chain_name(s.ifname);
    for (const Json& c : *chains) {
      if (!c.is_string() || (c.get_ref<const std::string&>() != in && c.get_ref<const std::string&>() != out))
        throw_bad_cached_state("mesh", "chains", "names a chain that is not this interface's");
      s.chains.push_back(c.get<std::string>());
    }
  }

  if (auto payloads = j.find("payloads"); payloads != j.end()) {
    if (!payloads->is_object()) throw_bad_cached_state("mesh", "payloads", "is not an object");
    for (const auto& [key, value] : payloads->items()) {
      const auto family = key == "4"   ? std::optional(Family::V4)
                          : key == "6" ? std::optional(Family::V6)
                                       : std::nullopt;
      if (!family || !value.is_string() || value.get_ref<const std::string&>().size() > kMaxPayloadBytes)
        throw_bad_cached_state("mesh", "payloads", "holds something other than a payload text per family \"4\"/\"6\"");
      s.payloads[*family] = value.get<std::string>();
    }
  }

  if (auto wait = j.find("lockWaitSeconds"); wait != j.end()) {
    if (!wait->is_number_integer() || wait->get<long long>() < 1 || wait->get<long long>() > 600)
      throw_bad_cached_state("mesh", "lockWaitSeconds", "is not a number of seconds (1-600)");
    s.lock_wait_seconds = wait->get<int>();
  }
  return s;
}

MeshState MeshState::rebuilt(std::string ifname, std::vector<Family> families) {
  firewall::validate_ifname(ifname);
  MeshState s;
  s.chains = {inbound_chain_name(ifname), outbound_chain_name(ifname)};
  s.ifname = std::move(ifname);
  s.families = unique_families(families);
  return s;
}

MeshState apply_mesh(IptablesRunner& runner, const std::string& ifname, const MeshConfig& cfg,
                     const std::vector<Family>& families) {
  firewall::validate_ifname(ifname);
  MeshState state;
  state.ifname = ifname;
  state.lock_wait_seconds = cfg.lock_wait_seconds;
  if (!cfg.active() || families.empty()) return state;

  const std::optional<Backend> forced = forced_backend(cfg);
  const Backend backend = forced ? *forced : runner.detect();
  state.backend = backend;
  for (const MeshChain& chain : mesh_chains(ifname, cfg, Family::V4)) state.chains.push_back(chain.name);

  for (Family family : unique_families(families)) {
    try {
      const std::string payload = build_add_payload(ifname, cfg, family, runner.save(family, backend, Table::Nat));
      runner.restore(family, backend, payload);
      state.families.push_back(family);
      state.payloads[family] = payload;
    } catch (const cni::CniError& e) {
      util::log_verbose("firewall: installing mesh rules of ", ifname, " (", family_name(family), ", ",
                        backend_name(backend), ") failed: ", e.msg());
      for (auto it = state.families.rbegin(); it != state.families.rend(); ++it) {
        try {
          remove_family(runner, ifname, *it, backend, false);
        } catch (const cni::CniError& undo) {
          util::log_error("firewall: rolling back mesh rules of ", ifname, " (", family_name(*it),
                          ") failed: ", undo.msg());
        }
      }
      throw;
    }
  }
  util::log_verbose("firewall: installed mesh rules of ", ifname, " with ", backend_name(backend));
  return state;
}

void remove_mesh(IptablesRunner& runner, const MeshState& state) {
  firewall::validate_ifname(state.ifname);
  for (Family family : state.families) {
    if (state.backend) {
      remove_family(runner, state.ifname, family, *state.backend, false);
      continue;
    }
    for (Backend backend : {Backend::Legacy, Backend::Nft}) {
      if (runner.available(family, backend)) remove_family(runner, state.ifname, family, backend, true);
    }
  }
}

std::vector<std::string> check_mesh(IptablesRunner& runner, const MeshState& state, const MeshConfig& cfg) {
  firewall::validate_ifname(state.ifname);
  std::vector<std::string> diffs;
  if (cfg.active() && state.families.empty()) {
    diffs.push_back("no mesh rules were recorded for " + state.ifname + " although the mesh is enabled");
    return diffs;
  }
  if (state.families.empty()) return diffs;
  const std::optional<Backend> forced = forced_backend(cfg);
  const Backend backend = state.backend ? *state.backend : forced ? *forced : runner.detect();
  for (Family family : state.families) {
    // A config that is no longer active expects none of our chains: leftovers are reported.
    const std::vector<MeshChain> expected =
        cfg.active() ? mesh_chains(state.ifname, cfg, family) : std::vector<MeshChain>{};
    for (const std::string& d : compare_mesh_rules(runner.save(family, backend, Table::Nat), state.ifname, expected))
      diffs.push_back(std::string(family_name(family)) + ": " + d);
  }
  return diffs;
}

Json mesh_status_fields(const MeshConfig& cfg) {
  Json fields = Json::object();
  if (!cfg.active()) return fields;
  Json mesh = Json::object();
  if (cfg.redirect_inbound) mesh["inboundPort"] = cfg.inbound_port;
  if (cfg.redirect_outbound) mesh["outboundPort"] = cfg.outbound_port;
  fields[std::string(kMeshStatusField)] = std::move(mesh);
  return fields;
}

}  // namespace manifold::scoping
