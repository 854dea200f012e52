// Fuzz target: a NetworkAttachmentDefinition's `spec.config`. The input becomes spec.config of a
// NAD object (and, when it is itself a JSON object, the whole NAD object as the API returned it);
// nad_delegate_config extracts the delegate, which then goes through what ADD does with it:
// cni-args merging, the cni module's shape check, delegate preparation and the `mesh` scoping
// layer. Checks: an accepted config is an object carrying a name and a plain-file-name type (or a
// conflist of such plugins) — so it can never make manifold exec a path — and serialises as JSON.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "cni/delegate_config.h"
#include "cni/netconf.h"
#include "exec/plugin_finder.h"
#include "scoping/mesh_config.h"
#include "k8s/nad_config.h"
#include "k8s/selection.h"
#include "fuzz_common.h"
#include "util/utf8.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

void check_type(const Json& plugin) {
  auto type = plugin.find("type");
  if (type == plugin.end() || !type->is_string())
    fuzz::fuzz_bug("accepted a delegate without a string type: " + plugin.dump().substr(0, 200));
  const std::string& t = type->get_ref<const std::string&>();
  if (t.empty() || t == "." || t == ".." || t.find('/') != std::string::npos || t.find('\0') != std::string::npos)
    fuzz::fuzz_bug("accepted a delegate type that is not a plain file name: " + t);
  fuzz::accepts([&] { exec::validate_plugin_type(t); });
}

void use_delegate(Json config) {
  if (!config.is_object() || !config.contains("name") || !config["name"].is_string())
    fuzz::fuzz_bug("accepted a NAD config without a string name");
  if (k8s::is_conflist(config)) {
    for (const Json& plugin : config["plugins"]) check_type(plugin);
  } else {
    check_type(config);
  }
  (void)k8s::nad_resource_name(config);
  fuzz::accepts([&] { k8s::merge_cni_args(config, Json{{"mesh", {{"enabled", true}}}, {"label", "x"}}); });
  fuzz::accepts([&] { cni::validate_delegate_shape(config, "NAD"); });
  Json prepared =
      cni::prepare_delegate(config, Json{{"portMappings", Json::array()}, {"ips", {"10.1.1.5/24"}}}, "1.0.0");
  fuzz::must_parse(prepared.dump(), "prepare_delegate");
  auto mesh = config.find("mesh");
  fuzz::accepts([&] { (void)scoping::merge_mesh_layers(Json(), mesh == config.end() ? Json() : *mesh, Json()); });
}

void try_nad(const Json& nad) {
  std::optional<Json> config;
  if (!fuzz::accepts([&] { config = k8s::nad_delegate_config(nad); })) return;
  (void)k8s::nad_resource_name(nad);
  if (config) use_delegate(std::move(*config));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  Json nad = {{"apiVersion", "k8s.cni.cncf.io/v1"},
              {"kind", "NetworkAttachmentDefinition"},
              {"metadata",
               {{"name", "macvlan-conf"},
                {"namespace", "default"},
                {"annotations", {{k8s::kResourceNameAnnotation, "intel.com/sriov"}}}}},
              {"spec", {{"config", std::string()}}}};
  // spec.config is a JSON string: the input must be valid UTF-8 to get there, as from the API.
  const std::string text = util::sanitize_utf8(input);
  nad["spec"]["config"] = text;
  try_nad(nad);

  // The input as the whole NAD object, as the API client hands it over.
  Json whole = Json::parse(input, nullptr, false);
  if (!whole.is_discarded()) try_nad(whole);
  return 0;
}
