// Implementation of CHECK: interfaces and addresses, the delegates' CHECK, the scoping state, the
// MultiNetworkPolicy rules.
#include "engine/check.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "cni/error.h"
#include "engine/cached.h"
#include "engine/detach.h"
#include "engine/policy_step.h"
#include "util/ip.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;
using cni::ErrorCode;

// True when `present` (the addresses on the interface) holds `address`.
bool holds(const std::vector<netlink::AddressInfo>& present, const std::string& address) {
  const std::optional<util::IpPrefix> want = util::parse_cidr(address);
  return want &&
         std::any_of(present.begin(), present.end(), [&](const netlink::AddressInfo& a) { return a.cidr == *want; });
}

}  // namespace

void check_interface(netlink::NetOps& ops, const store::AttachmentRecord& a) {
  auto link = ops.find_link(a.ifname);
  if (!link)
    throw CniError(ErrorCode::CheckFailed,
                   "interface " + a.ifname + " of network \"" + a.name + "\" is missing from the network namespace");
  cni::Result r;
  try {
    r = decode_attachment_result(a);
  } catch (const CniError& e) {
    throw CniError(ErrorCode::Decoding,
                   "the cached result of network \"" + a.name + "\" (" + a.ifname + ") cannot be decoded: " + e.msg());
  }
  const std::vector<netlink::AddressInfo> present = ops.list_addresses(link->index);
  for (const auto& ip : r.ips) {
    if (!ip.interface || *ip.interface >= static_cast<int>(r.interfaces.size())) continue;
    const auto& itf = r.interfaces[*ip.interface];
    if (itf.sandbox.empty() || itf.name != a.ifname) continue;
    if (!holds(present, ip.address))
      throw CniError(ErrorCode::CheckFailed,
                     "address " + ip.address + " of network \"" + a.name + "\" is missing from interface " + a.ifname);
  }
}

void check_entry(const Services& services, Session& session, const cni::Invocation& inv) {
  auto record = session.cache->load(session.key);
  if (!record || record->attachments.empty())
    throw CniError(ErrorCode::UnknownContainer, "no attachments are recorded for container " + inv.container_id +
                                                    " in network \"" + session.key.network + "\" (" + inv.ifname + ")");
  ScopingSession scoping(services, inv.netns);
  for (const auto& a : record->attachments) {
    if (a.result.empty())
      throw CniError(ErrorCode::CheckFailed, "network \"" + a.name + "\" was never completely added");
    check_interface(*scoping.net, a);
    if (!session.runner->check(a.config, a.result, target_for(inv, inv.netns, a)))
      util::log_verbose("network \"", a.name, "\" is older than 0.4.0 and has no CHECK; checked its interface only");
    if (a.scoping.is_null()) continue;
    std::string diffs;
    for (const auto& d : scoping::check_scoping(scoping.env, a.scoping)) diffs += (diffs.empty() ? "" : "; ") + d;
    if (!diffs.empty())
      throw CniError(ErrorCode::CheckFailed, "network \"" + a.name + "\" (" + a.ifname + "): " + diffs);
  }
  std::string diffs;
  for (const auto& d : check_policies(services, session, inv, *record, scoping.env))
    diffs += (diffs.empty() ? "" : "; ") + d;
  if (!diffs.empty())
    throw CniError(ErrorCode::CheckFailed, "MultiNetworkPolicy rules differ from what the policies generate: " + diffs);
}

}  // namespace manifold::engine
