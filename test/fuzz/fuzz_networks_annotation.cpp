// Fuzz target: the pod's `k8s.v1.cni.cncf.io/networks` and `v1.multus-cni.io/default-network`
// annotations (comma form and JSON form). Every accepted selection element is turned into what its
// delegate receives — runtimeConfig, the IP=/MAC= CNI_ARGS additions, and its cni-args merged into
// a delegate config — and checked: names and namespaces are Kubernetes-valid, interface names are
// valid, the CNI_ARGS additions parse as CNI_ARGS, and everything serialises as JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cni/cni_args.h"
#include "k8s/api_client.h"
#include "k8s/nad_config.h"
#include "k8s/selection.h"
#include "fuzz_common.h"
#include "util/utf8.h"
#include "util/ifname.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

void check_element(const k8s::SelectionElement& e) {
  if (!k8s::is_dns1123_label(e.namespace_) || !k8s::is_dns1123_subdomain(e.name))
    fuzz::fuzz_bug("accepted an invalid network reference: " + e.namespace_ + "/" + e.name);
  if (!e.interface.empty() && !util::is_valid_ifname(e.interface))
    fuzz::fuzz_bug("accepted an invalid interface name: " + e.interface);
  (void)k8s::runtime_config_for(e).dump();

  const std::string extra = k8s::cni_args_for(e);
  cni::CniArgs parsed;
  if (!fuzz::accepts([&] { parsed = cni::CniArgs::parse(extra); }))
    fuzz::fuzz_bug("cni_args_for produced CNI_ARGS that do not parse: " + extra.substr(0, 200));
  std::vector<std::pair<std::string, std::string>> pairs(parsed.pairs().begin(), parsed.pairs().end());
  (void)cni::delegate_cni_args(cni::CniArgs::parse("K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"), pairs);

  Json conf = {{"cniVersion", "1.0.0"}, {"name", e.name}, {"type", "macvlan"}};
  Json list = {{"cniVersion", "1.0.0"},
               {"name", e.name},
               {"plugins", {{{"type", "bridge"}}, {{"type", "tuning"}, {"args", {{"cni", {{"x", 1}}}}}}}}};
  fuzz::accepts([&] { k8s::merge_cni_args(conf, e.cni_args); });
  fuzz::accepts([&] { k8s::merge_cni_args(list, e.cni_args); });
  (void)conf.dump();
  (void)list.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);

  std::vector<k8s::SelectionElement> elements;
  if (fuzz::accepts([&] { elements = k8s::parse_networks_annotation(input, "default"); })) {
    if (elements.size() > k8s::kMaxSelectionElements) fuzz::fuzz_bug("more selection elements than the bound");
    for (const auto& e : elements) check_element(e);
  }
  k8s::SelectionElement def;
  if (fuzz::accepts([&] { def = k8s::parse_default_network_annotation(input, "kube-system"); })) check_element(def);

  // Error messages quote annotation text; sanitize_utf8 must make any text JSON-safe.
  const std::string clean = util::sanitize_utf8(input);
  (void)Json(clean).dump();
  return 0;
}
