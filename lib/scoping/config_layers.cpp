// Layered per-attachment settings (see config_layers.h).
#include "scoping/config_layers.h"

#include <string>
#include <utility>

#include "cni/error.h"

namespace manifold::scoping {

Json merge_config_layers(std::string_view key, const Json& top, const Json& delegate, const Json& cni_args) {
  Json merged = Json::object();
  for (const auto& [layer, where] : {std::pair<const Json&, std::string_view>{top, "meta-plugin config"},
                                     {delegate, "network config"},
                                     {cni_args, "pod cni-args"}}) {
    if (layer.is_null()) continue;
    if (!layer.is_object())
      cni::throw_invalid_config("invalid " + std::string(key) + " in the " + std::string(where) +
                                ": must be an object, got " + layer.type_name());
    for (const auto& [k, value] : layer.items()) merged[k] = value;
  }
  return merged;
}

}  // namespace manifold::scoping
