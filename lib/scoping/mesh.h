// The mesh-redirect lifecycle of one attachment on top of an IptablesRunner:
//  - apply_mesh (ADD): pick the backend (forced by iptablesMode, else detected in the pod netns),
//    then per family save → build the ADD payload against the save → restore. If a later family
//    fails, the families already applied are removed again before the error propagates, so a
//    failed ADD leaves nothing behind.
//  - remove_mesh (DEL): per family, from a fresh save, build the DEL payload from the saved text
//    (never from config) and restore it; nothing is executed when nothing of ours exists; if the
//    restore fails (a concurrent change made a -D miss) it re-saves and retries once. Without a
//    cached state (MeshState::rebuilt) both backends are tried.
//  - check_mesh (CHECK): compares each family's save text with the chains the config generates.
// MeshState is what the cache keeps between the three: backend, families, chains and the exact
// payloads applied.
//
// Network-status: a meshed attachment's entry gets one extra field, kMeshStatusField
// ("manifold.io/mesh"), an object {"inboundPort": N, "outboundPort": M} (a port is present only when
// that direction is redirected). The name is namespaced with a domain and a '/', so readers of the
// Multus network-status format (which decode known fields only) ignore it safely, while a mesh can
// read it to learn which attachment IPs it must accept traffic for.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firewall/iptables_types.h"
#include "firewall/mesh_config.h"
#include "firewall/runner.h"
#include "util/json.h"

namespace manifold::scoping {

/// The network-status field a meshed attachment's entry carries (see the file comment).
inline constexpr std::string_view kMeshStatusField = "manifold.io/mesh";

/// What ADD installed for one attachment, as cached for DEL and CHECK.
struct MeshState {
  std::string ifname;                                ///< the attachment's interface in the pod
  std::optional<firewall::Backend> backend;          ///< nullopt when unknown (rebuilt without the cache)
  std::vector<firewall::Family> families;            ///< families holding our rules, in apply order
  std::vector<std::string> chains;                   ///< our chain names
  std::map<firewall::Family, std::string> payloads;  ///< the exact ADD payload applied per family
  int lock_wait_seconds = 30;                        ///< lockWaitSeconds used at ADD

  /// True when no rules were installed (mesh disabled).
  bool empty() const { return families.empty(); }

  /// {"ifname","backend"("legacy"|"nft"|null),"families":[4,6],"chains":[…],"payloads":{"4":…},
  ///  "lockWaitSeconds":N}
  Json to_json() const;
  /// Reads to_json()'s form back, validating everything (the cache file may be corrupt or
  /// hostile). Throws CniError(Decoding) naming the bad field.
  static MeshState from_json(const Json& j);
  /// A state for DEL when the cache lost it: the interface name and the families that may hold
  /// rules; the backend is unknown, so remove_mesh tries both. Validates the interface name.
  static MeshState rebuilt(std::string ifname, std::vector<firewall::Family> families);
};

/// ADD: installs the redirect chains for `ifname` in every family of `families` (see the file
/// comment). Returns an empty state without touching iptables when `cfg` is not active. Throws
/// CniError(InvalidConfig) for a bad interface name, CniError(Firewall) when iptables fails.
MeshState apply_mesh(firewall::IptablesRunner& runner, const std::string& ifname, const firewall::MeshConfig& cfg,
                     const std::vector<firewall::Family>& families);

/// DEL: removes our chains and jumps for every family of `state` (see the file comment).
/// Idempotent. Throws CniError(Firewall) when a removal fails twice, or when the recorded backend
/// cannot be read — including a namespace that no longer exists: the caller skips remove_mesh when
/// the netns is gone, since the rules died with it.
void remove_mesh(firewall::IptablesRunner& runner, const MeshState& state);

/// CHECK: every difference between the installed rules and what `cfg` generates, prefixed with the
/// family ("IPv4: chain CNIMESH-IN-net1 is missing"). Empty when everything matches.
std::vector<std::string> check_mesh(firewall::IptablesRunner& runner, const MeshState& state,
                                    const firewall::MeshConfig& cfg);

/// The extra network-status fields of a meshed attachment: {"manifold.io/mesh": {…}} when `cfg` is
/// active, otherwise an empty object.
Json mesh_status_fields(const firewall::MeshConfig& cfg);

}  // namespace manifold::scoping
