// Tests for lib/cni/config_layers: later layers win per key, null layers are empty, and a layer that
// is not an object is error 7 naming the setting and the layer.
#include "scoping/config_layers.h"

#include <catch2/catch.hpp>

#include "cni_error_of.h"

using manifold::Json;
using manifold::scoping::merge_config_layers;
using manifold::test::code_of;

TEST_CASE("config layers: later layers win per key, null layers are empty", "[cni]") {
  Json merged = merge_config_layers("mesh", Json{{"a", 1}, {"b", 1}}, nullptr, Json{{"b", 3}, {"c", 3}});
  CHECK(merged == Json{{"a", 1}, {"b", 3}, {"c", 3}});
  CHECK(merge_config_layers("mesh", nullptr, nullptr, nullptr) == Json::object());
  CHECK(merge_config_layers("mesh", Json{{"a", 1}}, Json{{"a", 2}}, nullptr) == Json{{"a", 2}});
}

TEST_CASE("config layers: a layer that is not an object names the setting and the layer", "[cni]") {
  std::string msg;
  CHECK(code_of([] { (void)merge_config_layers("sourceRouting", Json::array(), nullptr, nullptr); }, &msg) == 7);
  CHECK(msg == "invalid sourceRouting in the meta-plugin config: must be an object, got array");
  CHECK(code_of([] { (void)merge_config_layers("mesh", nullptr, nullptr, "on"); }, &msg) == 7);
  CHECK(msg == "invalid mesh in the pod cni-args: must be an object, got string");
}
