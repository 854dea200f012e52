// Fuzz target: a delegate's result JSON, in every spec version. The input is decoded with each
// fallback version (the config's version, used when the result has no cniVersion); every decoded
// result is encoded into every supported version, merged with itself, asked for its default-route
// gateways and rendered as network-status. Checks: encoding a decoded result never fails with an
// internal error, what we encode decodes again (to the same model, minus the fields the version
// cannot carry, when the version is unchanged),
// merging keeps interface indexes valid, and network-status is valid JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cni/result.h"
#include "cni/result_codec.h"
#include "cni/version.h"
#include "k8s/network_status.h"
#include "fuzz_common.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

/// What manifold reports about one attachment, from its decoded result.
k8s::StatusInput status_input(const cni::Result& r, bool is_default) {
  k8s::StatusInput in;
  in.name = "default/macvlan-conf";
  in.is_default = is_default;
  for (const cni::Interface& i : r.interfaces) in.interfaces.push_back({i.name, i.mac, i.mtu.value_or(0), i.sandbox});
  for (const cni::IpConfig& ip : r.ips) in.ips.push_back({ip.address, ip.interface, ip.gateway});
  in.gateways = cni::default_route_gateways(r);
  in.dns = {r.dns.nameservers, r.dns.domain, r.dns.search, r.dns.options};
  in.device_info = Json{{"type", "pci"}, {"version", "1.1.0"}, {"pci", {{"pci-address", "0000:03:00.1"}}}};
  in.extra_fields = Json{{"cni-version", r.cni_version}};
  return in;
}

/// `r` as `version` can carry it: the 1.1.0-only fields are dropped below 1.1.0. For 0.1.0/0.2.0,
/// whose routes live inside ip4/ip6 and are regrouped by family, only the IPs and DNS are kept.
cni::Result as_carried_by(cni::Result r, const std::string& version) {
  const cni::SpecVersion v = *cni::SpecVersion::parse(version);
  if (v < cni::SpecVersion{1, 1, 0}) {
    for (cni::Interface& i : r.interfaces) {
      i.mtu.reset();
      i.socket_path.clear();
      i.pci_id.clear();
    }
    for (cni::Route& route : r.routes)
      route.mtu = route.advmss = route.priority = route.table = route.scope = std::nullopt;
  }
  if (cni::result_family(v) == cni::ResultFamily::V02) r.routes.clear();
  return r;
}

void check_encodings(const cni::Result& r) {
  for (const std::string& target : cni::supported_versions()) {
    Json encoded;
    if (!fuzz::accepts_no_internal([&] { encoded = cni::encode_result(r, target); }, "encode_result")) continue;
    const std::string text = encoded.dump();
    cni::Result again;
    if (!fuzz::accepts([&] { again = cni::decode_result_text(text, ""); }))
      fuzz::fuzz_bug("a result encoded as " + target + " does not decode: " + text.substr(0, 300));
    if (target == r.cni_version && as_carried_by(again, target) != as_carried_by(r, target))
      fuzz::fuzz_bug("decode(encode(r)) != r in version " + target + ": " + text.substr(0, 300));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  std::vector<cni::Result> decoded;
  for (const char* fallback : {"", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", "2.0.0"}) {
    cni::Result r;
    if (!fuzz::accepts([&] { r = cni::decode_result_text(input, fallback); })) continue;
    if (!cni::is_supported_version(r.cni_version)) fuzz::fuzz_bug("decoded an unsupported version " + r.cni_version);
    for (const cni::IpConfig& ip : r.ips)
      if (ip.interface && (*ip.interface < 0 || static_cast<size_t>(*ip.interface) >= r.interfaces.size()))
        fuzz::fuzz_bug("decoded an out-of-range interface index");
    // All fallbacks give the same result when the input names its version: check that one once.
    if (decoded.empty() || !(decoded.back() == r)) {
      check_encodings(r);
      decoded.push_back(std::move(r));
    }
  }
  if (decoded.empty()) return 0;

  std::vector<cni::Result> twice = {decoded.front(), decoded.back()};
  cni::Result merged = cni::merge_results(twice);
  if (merged.interfaces.size() != decoded.front().interfaces.size() + decoded.back().interfaces.size())
    fuzz::fuzz_bug("merge_results lost interfaces");
  for (const cni::IpConfig& ip : merged.ips)
    if (ip.interface && static_cast<size_t>(*ip.interface) >= merged.interfaces.size())
      fuzz::fuzz_bug("merge_results produced an out-of-range interface index");
  fuzz::accepts_no_internal([&] { (void)cni::encode_result(merged, merged.cni_version); }, "encode merged");
  (void)cni::default_route_gateways(merged);

  std::vector<k8s::StatusInput> status;
  for (size_t i = 0; i < decoded.size(); ++i) status.push_back(status_input(decoded[i], i == 0));
  std::string rendered;
  fuzz::accepts_no_internal([&] { rendered = k8s::render_network_status(status); }, "render_network_status");
  if (!rendered.empty() && !fuzz::must_parse(rendered, "render_network_status").is_array())
    fuzz::fuzz_bug("network-status is not a JSON list");
  return 0;
}
