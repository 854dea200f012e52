// Unit tests for install-time config generation: primary selection that ignores manifold's own files,
// wrapping a bridge conflist (1.0.0 → .conflist) and a calico-like conf (0.3.1 → .conf) with their
// cniVersion and capabilities kept, template placeholders, version conflicts, and a kubeconfig that
// references the token file and CA file and never contains a token.
#include <catch2/catch.hpp>

#include <algorithm>

#include <yaml-cpp/yaml.h>

#include "cni/config_validate.h"
#include "cni/error.h"
#include "cni/install_config.h"
#include "http/kubeconfig.h"
#include "util/file_reader.h"

using namespace manifold;
using namespace manifold::cni;

namespace {

const Json kBridgeConflist = Json::parse(R"({
  "cniVersion": "1.0.0", "name": "cbr0",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "bandwidth", "capabilities": {"bandwidth": true, "ips": false}}
  ]})");

const Json kCalicoConf = Json::parse(R"({
  "cniVersion": "0.3.1", "name": "k8s-pod-network", "type": "calico",
  "log_level": "info", "datastore_type": "kubernetes", "mtu": 1440,
  "ipam": {"type": "calico-ipam"}, "policy": {"type": "k8s"},
  "kubernetes": {"kubeconfig": "/etc/cni/net.d/calico-kubeconfig"}})");

}  // namespace

TEST_CASE("the primary is the lexically first .conf/.conflist that is not ours", "[cni]") {
  auto c = primary_candidates({"99-loopback.conf", "00-manifold.conf", "10-calico.conflist", "00-manifold.conflist",
                               ".00-manifold.conf.tmp-AbC123", ".hidden.conf", "05-notes.txt", "20-x.json",
                               "10-calico.conflist.old", "07-bridge.conf"});
  CHECK(c == std::vector<std::string>{"07-bridge.conf", "10-calico.conflist", "99-loopback.conf"});
  CHECK(primary_candidates({"00-manifold.conf"}).empty());
  CHECK(is_generated_config_name("00-manifold.conflist"));
  CHECK(is_generated_config_name(".00-manifold.conf.tmp-x"));
  CHECK_FALSE(is_generated_config_name("00-multus.conf"));
}

TEST_CASE("meta-plugin configs are recognised so they are never wrapped", "[cni]") {
  CHECK(is_meta_plugin_config(Json::parse(R"({"type":"multus","delegates":[]})")));
  CHECK(is_meta_plugin_config(Json::parse(R"({"plugins":[{"type":"manifold"}]})")));
  CHECK_FALSE(is_meta_plugin_config(kBridgeConflist));
  CHECK_FALSE(is_meta_plugin_config(kCalicoConf));
}

TEST_CASE("the established network name: our generated config's, else a replaced Multus config's", "[cni]") {
  Json multus = Json::parse(R"({"cniVersion":"1.0.0","name":"multus-cni-network","plugins":[{"type":"multus"}]})");
  Json ours = Json::parse(R"({"cniVersion":"1.0.0","name":"kept-name","plugins":[{"type":"manifold"}]})");
  CHECK(established_network_name({}) == "");
  CHECK(established_network_name({{"10-bridge.conflist", kBridgeConflist}}) == "");
  CHECK(established_network_name({{"00-multus.conflist", multus}, {"10-bridge.conflist", kBridgeConflist}}) ==
        "multus-cni-network");
  CHECK(established_network_name({{"00-multus.conf", Json::parse(R"({"name":"thin","type":"multus"})")}}) == "thin");
  CHECK(established_network_name({{"00-multus.conf", Json::parse(R"({"name":"shim","type":"multus-shim"})")}}) ==
        "shim");
  // Our own config wins: the name stays once chosen, whatever happens to Multus's file.
  CHECK(established_network_name({{"00-manifold.conflist", ours}, {"00-multus.conflist", multus}}) == "kept-name");
  // A temp file of ours, a nameless or unparsable config and a third-party meta config name nothing.
  CHECK(established_network_name({{".00-manifold.conflist.tmp", ours}}) == "");
  CHECK(established_network_name({{"00-multus.conflist", Json::parse(R"({"plugins":[{"type":"multus"}]})")}}) == "");
  CHECK(established_network_name({{"00-multus.conf", Json(Json::value_t::discarded)}}) == "");
  CHECK(established_network_name({{"05-other.conf", Json::parse(R"({"name":"x","plugins":[{"type":"manifold"}]})")}}) ==
        "");
}

TEST_CASE("a bridge conflist is wrapped into 00-manifold.conflist", "[cni]") {
  GenerateSettings s;
  s.kubeconfig_path = "/etc/cni/net.d/manifold.d/manifold.kubeconfig";
  auto g = generate_config(kBridgeConflist, s);
  CHECK(g.file_name == "00-manifold.conflist");
  CHECK(g.config["cniVersion"] == "1.0.0");
  CHECK(g.config["name"] == "manifold-cni-network");
  REQUIRE(g.config["plugins"].size() == 1);
  const Json& plugin = g.config["plugins"][0];
  CHECK(plugin["type"] == "manifold");
  CHECK_FALSE(plugin.contains("cniVersion"));
  CHECK_FALSE(plugin.contains("name"));
  CHECK(plugin["capabilities"] == Json::parse(R"({"portMappings":true,"bandwidth":true})"));
  CHECK(plugin["kubeconfig"] == s.kubeconfig_path);
  REQUIRE(plugin["delegates"].size() == 1);
  CHECK(plugin["delegates"][0] == kBridgeConflist);
  CHECK(plugin["delegates"][0].dump() == kBridgeConflist.dump());  // key order kept too
  CHECK_FALSE(has_errors(validate_config_document(g.config)));
}

TEST_CASE("a calico-like conf is wrapped into 00-manifold.conf", "[cni]") {
  GenerateSettings s;
  s.network_name = "";  // keep the primary's name
  auto g = generate_config(kCalicoConf, s);
  CHECK(g.file_name == "00-manifold.conf");
  CHECK(g.config["cniVersion"] == "0.3.1");
  CHECK(g.config["name"] == "k8s-pod-network");
  CHECK(g.config["type"] == "manifold");
  CHECK_FALSE(g.config.contains("capabilities"));  // calico declares none here: the key is dropped
  CHECK_FALSE(g.config.contains("kubeconfig"));    // no kubeconfig path given
  CHECK(g.config["delegates"] == Json::array({kCalicoConf}));
  CHECK(g.config["logOptions"]["maxSize"] == 100);
  CHECK_FALSE(has_errors(validate_config_document(g.config)));
}

TEST_CASE("the cniVersion comes from the primary unless forced", "[cni]") {
  GenerateSettings s;
  s.cni_version = "1.0.0";
  REQUIRE_THROWS_AS(generate_config(kCalicoConf, s), CniError);
  try {
    generate_config(kCalicoConf, s);
  } catch (const CniError& e) {
    CHECK(e.code() == 7);
    CHECK(e.msg().find("\"0.3.1\" but \"1.0.0\" was requested") != std::string::npos);
  }
  s.force_cni_version = true;
  auto g = generate_config(kCalicoConf, s);
  CHECK(g.file_name == "00-manifold.conflist");
  CHECK(g.config["cniVersion"] == "1.0.0");
  CHECK(g.config["plugins"][0]["delegates"][0]["cniVersion"] == "0.3.1");
  s.cni_version = "0.3.1";
  s.force_cni_version = false;
  CHECK(generate_config(kCalicoConf, s).config["cniVersion"] == "0.3.1");

  Json no_version = kCalicoConf;
  no_version.erase("cniVersion");
  CHECK_THROWS_AS(generate_config(no_version, GenerateSettings{}), CniError);
  s.cni_version = "0.4.0";
  CHECK(generate_config(no_version, s).config["cniVersion"] == "0.4.0");
  no_version["cniVersion"] = "7.0.0";
  CHECK_THROWS_AS(generate_config(no_version, GenerateSettings{}), CniError);
}

TEST_CASE("custom templates are filled, unknown placeholders are errors", "[cni]") {
  GenerateSettings s;
  s.template_text = R"({"cniVersion":"${CNI_VERSION}","name":"${NETWORK_NAME}","type":"manifold",
                        "logLevel":"debug","namespaceIsolation":true,"delegates":["${PRIMARY_CONFIG}"]})";
  auto g = generate_config(kCalicoConf, s);
  CHECK(g.config.dump() == Json{{"cniVersion", "0.3.1"},
                                {"name", "manifold-cni-network"},
                                {"type", "manifold"},
                                {"logLevel", "debug"},
                                {"namespaceIsolation", true},
                                {"delegates", Json::array({kCalicoConf})}}
                               .dump());
  s.template_text =
      R"({"cniVersion":"${CNI_VERSION}","type":"manifold","x":"${TYPO}","delegates":["${PRIMARY_CONFIG}"]})";
  CHECK_THROWS_WITH(generate_config(kCalicoConf, s), Catch::Contains("unknown placeholder \"${TYPO}\""));
  s.template_text = "[1]";
  CHECK_THROWS_AS(generate_config(kCalicoConf, s), CniError);
  s.template_text =
      R"({"cniVersion":"${CNI_VERSION}","type":"manifold","logLevel":"loud","delegates":["${PRIMARY_CONFIG}"]})";
  CHECK_THROWS_WITH(generate_config(kCalicoConf, s), Catch::Contains("$.logLevel: must be one of"));
}

TEST_CASE("the default template is valid JSON with every placeholder", "[cni]") {
  Json t = Json::parse(default_config_template());
  CHECK(t["cniVersion"] == "${CNI_VERSION}");
  CHECK(t["delegates"] == Json::array({"${PRIMARY_CONFIG}"}));
  CHECK(t["type"] == "manifold");
}

TEST_CASE("the kubeconfig references the token file and CA file", "[cni]") {
  KubeconfigSettings k;
  k.server = api_server_url("10.96.0.1", "443");
  k.ca_file = "/etc/cni/net.d/manifold.d/ca.crt";
  k.token_file = "/etc/cni/net.d/manifold.d/token";
  std::string text = render_kubeconfig(k);
  // JSON, which is YAML too: what kubectl reads, and what manifold's loader reads without yaml-cpp.
  Json j = Json::parse(text);
  CHECK(j["apiVersion"] == "v1");
  CHECK(j["kind"] == "Config");
  CHECK(j["current-context"] == "manifold-context");
  CHECK(j["clusters"][0]["cluster"]["server"] == "https://10.96.0.1:443");
  CHECK(j["clusters"][0]["cluster"]["certificate-authority"] == k.ca_file);
  CHECK(j["users"][0]["user"] == Json({{"tokenFile", k.token_file}}));
  CHECK(j["contexts"][0]["context"]["user"] == "manifold");
  CHECK(text.find("\"token\"") == std::string::npos);
  CHECK(text.find("-data") == std::string::npos);
  YAML::Node y = YAML::Load(text);
  CHECK(y["current-context"].as<std::string>() == "manifold-context");
  CHECK(y["users"][0]["user"]["tokenFile"].as<std::string>() == k.token_file);

  k.insecure = true;
  k.ca_file.clear();
  j = Json::parse(render_kubeconfig(k));
  CHECK(j["clusters"][0]["cluster"] == Json({{"server", k.server}, {"insecure-skip-tls-verify", true}}));
  CHECK(YAML::Load(render_kubeconfig(k))["clusters"][0]["cluster"]["insecure-skip-tls-verify"].as<bool>());

  k.token_file = "relative/token";
  CHECK_THROWS_AS(render_kubeconfig(k), CniError);
  k.token_file = "/t";
  k.server = "http://10.0.0.1:80";
  CHECK_THROWS_AS(render_kubeconfig(k), CniError);
  k.server = "https://10.0.0.1:443";
  k.token_file = "/var/run/\xff\xfe/token";  // not UTF-8: refused rather than rewritten
  CHECK_THROWS_AS(render_kubeconfig(k), CniError);
}

TEST_CASE("the generated kubeconfig is what manifold's own loader reads", "[cni]") {
  KubeconfigSettings k;
  k.server = api_server_url("fd00::1", "6443");
  k.ca_file = "/etc/cni/net.d/manifold.d/ca.crt";
  k.token_file = "/etc/cni/net.d/manifold.d/token";
  util::FakeFileReader files;
  files.add("/etc/cni/net.d/manifold.d/manifold.kubeconfig", render_kubeconfig(k));
  files.add(k.ca_file, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  auto auth = http::load_kubeconfig("/etc/cni/net.d/manifold.d/manifold.kubeconfig", files);
  CHECK(auth.server == "https://[fd00::1]:6443");
  CHECK(auth.token_file == k.token_file);
  CHECK(auth.token.empty());
  CHECK(auth.ca_pem.find("BEGIN CERTIFICATE") != std::string::npos);
  CHECK_FALSE(auth.insecure_skip_tls_verify);
  // The token file is not read while loading: it is read on every API call.
  CHECK(std::find(files.reads().begin(), files.reads().end(), k.token_file) == files.reads().end());
}

TEST_CASE("API server URLs from the service environment", "[cni]") {
  CHECK(api_server_url("10.96.0.1", "443") == "https://10.96.0.1:443");
  CHECK(api_server_url("fd00::1", "6443") == "https://[fd00::1]:6443");
  CHECK(api_server_url("api.example.com", "6443") == "https://api.example.com:6443");
  CHECK_THROWS_AS(api_server_url("", "443"), CniError);
  CHECK_THROWS_AS(api_server_url("evil/host", "443"), CniError);
  CHECK_THROWS_AS(api_server_url("10.0.0.1", "0"), CniError);
  CHECK_THROWS_AS(api_server_url("10.0.0.1", "70000"), CniError);
  CHECK_THROWS_AS(api_server_url("10.0.0.1", "44a"), CniError);
}
