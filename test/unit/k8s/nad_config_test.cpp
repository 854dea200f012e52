// Tests of NAD config extraction (conf, conflist, empty spec, name injection, malformed objects of
// every kind), the resourceName annotation and the cni-args merge into args.cni.
#include <catch2/catch.hpp>

#include <string>

#include "cni/error.h"
#include "k8s/nad_config.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::k8s;

namespace {

Json make_nad(const Json& config, const std::string& name = "macvlan-conf", const std::string& ns = "ns1") {
  Json nad = {{"apiVersion", "k8s.cni.cncf.io/v1"},
              {"kind", "NetworkAttachmentDefinition"},
              {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (!config.is_null()) nad["spec"] = {{"config", config}};
  return nad;
}

std::string nad_error(const Json& nad) {
  try {
    nad_delegate_config(nad);
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  FAIL("expected a CniError for " << nad.dump());
  return {};
}

std::string merge_error(Json config, const Json& args) {
  try {
    merge_cni_args(config, args);
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  FAIL("expected a CniError");
  return {};
}

}  // namespace

TEST_CASE("NAD conf is returned as its delegate config", "[k8s]") {
  auto cfg = nad_delegate_config(make_nad(R"({"cniVersion":"1.0.0","name":"mynet","type":"macvlan","master":"eth0"})"));
  REQUIRE(cfg);
  CHECK(cfg->dump() == R"({"cniVersion":"1.0.0","name":"mynet","type":"macvlan","master":"eth0"})");
  CHECK_FALSE(is_conflist(*cfg));
}

TEST_CASE("NAD name is injected when the config has none", "[k8s]") {
  auto missing = nad_delegate_config(make_nad(R"({"cniVersion":"1.0.0","type":"macvlan"})"));
  REQUIRE(missing);
  CHECK((*missing)["name"] == "macvlan-conf");
  auto empty = nad_delegate_config(make_nad(R"({"name":"","type":"macvlan"})"));
  CHECK(empty->dump() == R"({"name":"macvlan-conf","type":"macvlan"})");
  auto null_name = nad_delegate_config(make_nad(R"({"name":null,"type":"macvlan"})"));
  CHECK((*null_name)["name"] == "macvlan-conf");
  CHECK(nad_error(make_nad(R"({"name":5,"type":"macvlan"})")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config \"name\" must be a string");
}

TEST_CASE("NAD conflist is returned, with name injection", "[k8s]") {
  auto cfg = nad_delegate_config(make_nad(
      R"({"cniVersion":"1.0.0","plugins":[{"type":"bridge","bridge":"br0"},{"type":"tuning","mtu":1400}]})", "chain"));
  REQUIRE(cfg);
  CHECK(is_conflist(*cfg));
  CHECK((*cfg)["name"] == "chain");
  CHECK((*cfg)["plugins"].size() == 2);
  CHECK((*cfg)["plugins"][1]["mtu"] == 1400);
}

TEST_CASE("empty or absent spec.config means a confDir lookup", "[k8s]") {
  CHECK_FALSE(nad_delegate_config(make_nad("")).has_value());
  CHECK_FALSE(nad_delegate_config(make_nad(nullptr)).has_value());  // no spec at all
  Json empty_spec = make_nad(nullptr);
  empty_spec["spec"] = Json::object();
  CHECK_FALSE(nad_delegate_config(empty_spec).has_value());
  Json null_spec = make_nad(nullptr);
  null_spec["spec"] = nullptr;
  CHECK_FALSE(nad_delegate_config(null_spec).has_value());
  Json null_config = make_nad(nullptr);
  null_config["spec"] = {{"config", nullptr}};
  CHECK_FALSE(nad_delegate_config(null_config).has_value());
}

TEST_CASE("spec.config that is not JSON or not an object", "[k8s]") {
  std::string not_json = nad_error(make_nad("{\"type\": macvlan}", "bad"));
  CHECK(not_json ==
        "NetworkAttachmentDefinition ns1/bad: spec.config is not valid JSON at line 1, column 10: "
        "invalid literal near '\"type\": m'");
  CHECK(nad_error(make_nad("   ")).find("spec.config is not valid JSON") != std::string::npos);
  CHECK(nad_error(make_nad(R"([{"type":"macvlan"}])")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config is a JSON array, not an object");
  CHECK(nad_error(make_nad(R"("macvlan")")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config is a JSON string, not an object");
  CHECK(nad_error(make_nad(std::string(100, '[') + std::string(100, ']'))).find("nested deeper than 64") !=
        std::string::npos);
  CHECK(nad_error(make_nad(std::string(kMaxNadConfigBytes + 1, ' '))).find("spec.config is too large") !=
        std::string::npos);
}

TEST_CASE("conf and conflist shape errors", "[k8s]") {
  CHECK(nad_error(make_nad(R"({"cniVersion":"1.0.0"})")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config must have a \"type\" (conf) or \"plugins\" "
        "(conflist)");
  CHECK(nad_error(make_nad(R"({"type":""})")).find("\"type\" must be a non-empty plugin file name") !=
        std::string::npos);
  CHECK(nad_error(make_nad(R"({"type":5})")).find("\"type\" must be a non-empty plugin file name") !=
        std::string::npos);
  CHECK(nad_error(make_nad(R"({"type":"../../bin/sh"})")).find("plugin file name") != std::string::npos);
  CHECK(nad_error(make_nad(R"({"type":".."})")).find("plugin file name") != std::string::npos);
  CHECK(nad_error(make_nad(R"({"plugins":[]})")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config \"plugins\" must be a non-empty list");
  CHECK(nad_error(make_nad(R"({"plugins":{"type":"bridge"}})")).find("must be a non-empty list") != std::string::npos);
  CHECK(nad_error(make_nad(R"({"plugins":[{"bridge":"br0"}]})")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config plugins[0] must have a non-empty plugin file "
        "name as \"type\"");
  CHECK(nad_error(make_nad(R"({"plugins":[{"type":"bridge"},"tuning"]})")) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config plugins[1] must be an object");
}

TEST_CASE("wrong types in the NAD object itself", "[k8s]") {
  CHECK(nad_error(Json::array()) == "NetworkAttachmentDefinition ?/?: object is a JSON array, not an object");
  Json no_meta = {{"spec", {{"config", "{}"}}}};
  CHECK(nad_error(no_meta) == "NetworkAttachmentDefinition ?/?: \"metadata\" is missing or not an object");
  Json meta_string = {{"metadata", "x"}, {"spec", {{"config", "{}"}}}};
  CHECK(nad_error(meta_string).find("\"metadata\" is missing or not an object") != std::string::npos);
  Json name_number = {{"metadata", {{"name", 3}, {"namespace", "ns1"}}}, {"spec", {{"config", "{}"}}}};
  CHECK(nad_error(name_number) ==
        "NetworkAttachmentDefinition ns1/?: metadata.name is missing or not a non-empty string");
  Json spec_string = make_nad(nullptr);
  spec_string["spec"] = "config";
  CHECK(nad_error(spec_string) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: \"spec\" is a JSON string, not an object");
  Json config_number = make_nad(nullptr);
  config_number["spec"] = {{"config", 42}};
  CHECK(nad_error(config_number) ==
        "NetworkAttachmentDefinition ns1/macvlan-conf: spec.config is a JSON number, not a string");
  Json config_object = make_nad(nullptr);
  config_object["spec"] = {{"config", {{"type", "macvlan"}}}};
  CHECK(nad_error(config_object).find("spec.config is a JSON object, not a string") != std::string::npos);
}

TEST_CASE("resourceName annotation", "[k8s]") {
  Json nad = make_nad(R"({"type":"sriov"})");
  CHECK(nad_resource_name(nad).empty());
  nad["metadata"]["annotations"] = {{"k8s.v1.cni.cncf.io/resourceName", "intel.com/sriov_netdevice"}, {"other", "x"}};
  CHECK(nad_resource_name(nad) == "intel.com/sriov_netdevice");
  nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] = 7;
  CHECK(nad_resource_name(nad).empty());
  nad["metadata"]["annotations"] = "not an object";
  CHECK(nad_resource_name(nad).empty());
  CHECK(nad_resource_name(Json("x")).empty());
  CHECK(nad_resource_name(Json{{"metadata", 1}}).empty());
}

TEST_CASE("cni-args merge into a conf", "[k8s]") {
  Json conf = Json::parse(R"({"name":"n","type":"tuning"})");
  merge_cni_args(conf, Json::parse(R"({"mac":"0a:58:0a:01:01:05","mtu":1400})"));
  CHECK(conf.dump() == R"({"name":"n","type":"tuning","args":{"cni":{"mac":"0a:58:0a:01:01:05","mtu":1400}}})");

  Json with_args = Json::parse(R"({"type":"tuning","args":{"cni":{"mtu":9000,"keep":"yes"},"other":1}})");
  merge_cni_args(with_args, Json::parse(R"({"mtu":1400,"new":true})"));
  CHECK(with_args.dump() == R"({"type":"tuning","args":{"cni":{"mtu":1400,"keep":"yes","new":true},"other":1}})");

  Json args_without_cni = Json::parse(R"({"type":"tuning","args":{"k8s":{}}})");
  merge_cni_args(args_without_cni, Json::parse(R"({"a":1})"));
  CHECK(args_without_cni.dump() == R"({"type":"tuning","args":{"k8s":{},"cni":{"a":1}}})");
}

TEST_CASE("cni-args merge into every plugin of a conflist", "[k8s]") {
  Json list = Json::parse(
      R"({"name":"c","plugins":[{"type":"bridge"},{"type":"tuning","args":{"cni":{"mtu":9000}}},{"type":"sbr"}]})");
  merge_cni_args(list, Json::parse(R"({"mtu":1400})"));
  CHECK(list.dump() == R"({"name":"c","plugins":[{"type":"bridge","args":{"cni":{"mtu":1400}}},)"
                       R"({"type":"tuning","args":{"cni":{"mtu":1400}}},{"type":"sbr","args":{"cni":{"mtu":1400}}}]})");
  CHECK_FALSE(list.contains("args"));
}

TEST_CASE("cni-args merge: no-ops and errors", "[k8s]") {
  Json conf = Json::parse(R"({"type":"tuning"})");
  merge_cni_args(conf, nullptr);
  merge_cni_args(conf, Json::object());
  CHECK(conf.dump() == R"({"type":"tuning"})");
  CHECK(merge_error(conf, Json::array()) == "cni-args must be an object, not a JSON array");
  CHECK(merge_error(Json::parse(R"({"type":"t","args":"x"})"), Json{{"a", 1}}) ==
        "cannot add cni-args: \"args\" of the delegate config is not an object");
  CHECK(merge_error(Json::parse(R"({"type":"t","args":{"cni":[1]}})"), Json{{"a", 1}}) ==
        "cannot add cni-args: \"args.cni\" of the delegate config is not an object");
  CHECK(merge_error(Json::parse(R"({"plugins":[{"type":"a"},7]})"), Json{{"a", 1}}) ==
        "cannot add cni-args: plugins[1] is not an object");
  CHECK(merge_error(Json::parse(R"({"plugins":"x"})"), Json{{"a", 1}}) ==
        "cannot add cni-args: \"plugins\" is not a list");
}

TEST_CASE("is_conflist", "[k8s]") {
  CHECK(is_conflist(Json::parse(R"({"plugins":[]})")));
  CHECK_FALSE(is_conflist(Json::parse(R"({"type":"x","plugins":[]})")));
  CHECK_FALSE(is_conflist(Json::parse(R"({"type":"x"})")));
  CHECK_FALSE(is_conflist(Json::array()));
}

TEST_CASE("NAD error messages stay valid UTF-8", "[k8s]") {
  std::string msg = nad_error(make_nad("{\"type\": \xc3\xa9\xc3"));
  CHECK(msg.find("spec.config is not valid JSON") != std::string::npos);
  CHECK_NOTHROW(Json(msg).dump());
}
