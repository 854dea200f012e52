// Unit tests for meta-plugin config parsing: every key, Multus defaults, and wrong types that must
// be error 7 naming the key.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "cni/netconf.h"

using namespace manifold;
using namespace manifold::cni;

namespace {

/// `text` parsed, with a network name when it has none (the spec requires one; most tests here
/// are about other keys).
Json named(const std::string& text) {
  Json j = Json::parse(text);
  if (j.is_object() && !j.contains("name")) j["name"] = "manifold-net";
  return j;
}

MetaConfig parse(const char* text) { return parse_meta_config(named(text)); }

std::string error_msg(const std::string& text) {
  try {
    parse_meta_config(named(text));
  } catch (const CniError& e) {
    CHECK(e.code() == 7);
    return e.msg();
  }
  FAIL("accepted: " << text);
  return "";
}

}  // namespace

TEST_CASE("defaults follow Multus", "[cni]") {
  auto m = parse(R"({"cniVersion":"1.0.0","delegates":[{"type":"bridge"}]})");
  CHECK(m.conf_dir == "/etc/cni/multus/net.d");
  CHECK(m.cni_dir == "/var/lib/cni/manifold");
  CHECK(m.bin_dir == "/opt/cni/bin");
  CHECK(m.multus_namespace == "kube-system");
  CHECK(m.system_namespaces == std::vector<std::string>{"kube-system"});
  CHECK(m.log_level == util::LogLevel::Panic);
  CHECK(m.log_to_stderr);
  CHECK_FALSE(m.namespace_isolation);
  CHECK_FALSE(m.retry_delete_on_error);
  CHECK_FALSE(m.return_all_results);
  CHECK(m.delegate_timeout_s == 60);
  CHECK(m.readiness_timeout_s == 45);
}

TEST_CASE("every key is read", "[cni]") {
  auto m = parse(R"({
    "cniVersion":"0.4.0","name":"multus-cni-network","type":"manifold",
    "delegates":[{"type":"bridge","name":"a"},{"cniVersion":"0.4.0","name":"l","plugins":[{"type":"macvlan"}]}],
    "clusterNetwork":"cbr0","defaultNetworks":["x","y"],"kubeconfig":"/etc/k.conf",
    "confDir":"/c","cniDir":"/d","binDir":"/b","readinessindicatorfile":"/r","readinessTimeout":3,
    "logFile":"/l","logLevel":"DEBUG","logToStderr":false,
    "logOptions":{"maxSize":10,"maxBackups":2,"maxAge":1,"compress":false},
    "namespaceIsolation":true,"globalNamespaces":"a, b","systemNamespaces":["s"],
    "multusNamespace":"m","retryDeleteOnError":true,"auxiliaryCNIChainName":"aux",
    "capabilities":{"portMappings":true},"runtimeConfig":{"portMappings":[]},
    "returnAllResults":true,"delegateTimeout":5,"someUnknownKey":{"ignored":true},
    "sourceRouting":{"tableBase":1000},"mesh":{"inboundPort":4143}})");
  CHECK(m.name == "multus-cni-network");
  CHECK(m.delegates.size() == 2);
  CHECK(m.cluster_network == "cbr0");
  CHECK(m.default_networks == std::vector<std::string>{"x", "y"});
  CHECK(m.kubeconfig == "/etc/k.conf");
  CHECK(m.conf_dir == "/c");
  CHECK(m.cni_dir == "/d");
  CHECK(m.bin_dir == "/b");
  CHECK(m.readiness_indicator_file == "/r");
  CHECK(m.readiness_timeout_s == 3);
  CHECK(m.log_file == "/l");
  CHECK(m.log_level == util::LogLevel::Debug);
  CHECK_FALSE(m.log_to_stderr);
  CHECK(m.log_options.max_size_mb == 10);
  CHECK(m.log_options.max_backups == 2);
  CHECK(m.log_options.max_age_days == 1);
  CHECK_FALSE(m.log_options.compress);
  CHECK(m.namespace_isolation);
  CHECK(m.global_namespaces == "a, b");
  CHECK(m.global_namespaces_set);
  CHECK(m.system_namespaces == std::vector<std::string>{"s"});
  CHECK(m.multus_namespace == "m");
  CHECK(m.retry_delete_on_error);
  CHECK(m.auxiliary_cni_chain_name == "aux");
  CHECK(m.capabilities["portMappings"] == true);
  CHECK(m.runtime_config.contains("portMappings"));
  CHECK(m.return_all_results);
  CHECK(m.delegate_timeout_s == 5);
  CHECK(m.scoping["sourceRouting"]["tableBase"] == 1000);
  CHECK(m.scoping["mesh"]["inboundPort"] == 4143);
}

TEST_CASE("an unknown logLevel is flagged, not fatal", "[cni]") {
  auto m = parse(R"({"delegates":[{"type":"bridge"}],"logLevel":"chatty"})");
  CHECK_FALSE(m.log_level_valid);
}

TEST_CASE("wrong types are error 7 naming the key", "[cni]") {
  const std::string d = R"("delegates":[{"type":"bridge"}])";
  CHECK_THAT(error_msg("{" + d + R"(,"confDir":5})"), Catch::Contains("\"confDir\""));
  CHECK_THAT(error_msg("{" + d + R"(,"logToStderr":"yes"})"), Catch::Contains("\"logToStderr\""));
  CHECK_THAT(error_msg("{" + d + R"(,"defaultNetworks":"x"})"), Catch::Contains("\"defaultNetworks\""));
  CHECK_THAT(error_msg("{" + d + R"(,"defaultNetworks":[1]})"), Catch::Contains("\"defaultNetworks\""));
  CHECK_THAT(error_msg("{" + d + R"(,"capabilities":[]})"), Catch::Contains("\"capabilities\""));
  CHECK_THAT(error_msg("{" + d + R"(,"delegateTimeout":0})"), Catch::Contains("\"delegateTimeout\""));
  CHECK_THAT(error_msg("{" + d + R"(,"delegateTimeout":"5"})"), Catch::Contains("\"delegateTimeout\""));
  CHECK_THAT(error_msg("{" + d + R"(,"logOptions":{"maxSize":"big"}})"), Catch::Contains("logOptions.maxSize"));
  CHECK_THAT(error_msg("{" + d + R"(,"mesh":"on"})"), Catch::Contains("\"mesh\""));
  CHECK_THAT(error_msg("{" + d + R"(,"delegateEnv":"HTTPS_PROXY"})"), Catch::Contains("\"delegateEnv\""));
  CHECK_THAT(error_msg("{" + d + R"(,"delegateEnv":["OK","BAD NAME"]})"), Catch::Contains("delegateEnv[1]"));
  CHECK_THAT(error_msg("{" + d + R"(,"delegateEnv":["*"]})"), Catch::Contains("delegateEnv[0]"));
  CHECK_THAT(error_msg("{" + d + R"(,"delegateEnv":["1X"]})"), Catch::Contains("delegateEnv[0]"));
  CHECK_THAT(error_msg(R"({"delegates":{"type":"bridge"}})"), Catch::Contains("\"delegates\""));
}

TEST_CASE("a NUL byte in any string key is error 7 naming the key", "[cni]") {
  // "\u0000" would cut a path short where it reaches libc: another file or directory would be used.
  const std::string d = R"("delegates":[{"type":"bridge"}])";
  for (const char* key : {"cniDir", "logFile", "kubeconfig", "confDir", "binDir", "agentSocket", "multusNamespace"})
    CHECK_THAT(error_msg("{" + d + ",\"" + key + R"(":"/var/lib/cni/manifold\u0000/etc"})"),
               Catch::Contains("\"" + std::string(key) + "\"") && Catch::Contains("NUL"));
  CHECK_THAT(error_msg("{" + d + R"(,"systemNamespaces":["kube-system","a\u0000b"]})"),
             Catch::Contains("\"systemNamespaces\"") && Catch::Contains("NUL"));
  CHECK(parse(R"({"delegates":[{"type":"bridge"}],"cniDir":"/var/lib/cni/manifold"})").cni_dir ==
        "/var/lib/cni/manifold");
}

TEST_CASE("delegates must be well-formed", "[cni]") {
  CHECK_THAT(error_msg(R"({"delegates":[]})"), Catch::Contains("at least one delegate"));
  CHECK_THAT(error_msg(R"({})"), Catch::Contains("at least one delegate"));
  CHECK_THAT(error_msg(R"({"delegates":[5]})"), Catch::Contains("delegates[0] must be an object"));
  CHECK_THAT(error_msg(R"({"delegates":[{"name":"x"}]})"), Catch::Contains("neither \"type\" nor \"plugins\""));
  CHECK_THAT(error_msg(R"({"delegates":[{"type":""}]})"), Catch::Contains("delegates[0].type"));
  CHECK_THAT(error_msg(R"({"delegates":[{"type":"a"},{"plugins":[]}]})"), Catch::Contains("delegates[1].plugins"));
  CHECK_THAT(error_msg(R"({"delegates":[{"plugins":[{"type":"a"},{"x":1}]}]})"),
             Catch::Contains("delegates[0].plugins[1].type"));
}

TEST_CASE("conflist detection and names", "[cni]") {
  CHECK(is_conflist(Json::parse(R"({"plugins":[{"type":"a"}]})")));
  CHECK_FALSE(is_conflist(Json::parse(R"({"type":"a"})")));
  CHECK(delegate_name(Json::parse(R"({"name":"n"})")) == "n");
  CHECK(delegate_name(Json::parse(R"({"name":5})")) == "");
}

TEST_CASE("the network name is required", "[cni]") {
  for (const char* text : {R"({"delegates":[{"type":"bridge"}]})", R"({"name":"","delegates":[{"type":"bridge"}]})"}) {
    try {
      parse_meta_config(Json::parse(text));
      FAIL("accepted: " << text);
    } catch (const CniError& e) {
      CHECK(e.code() == 7);
      CHECK_THAT(e.msg(), Catch::Contains("\"name\""));
    }
  }
  CHECK_THAT(error_msg(R"({"name":5,"delegates":[{"type":"bridge"}]})"), Catch::Contains("\"name\""));
}

TEST_CASE("delegateEnv lists extra variables for delegates", "[cni]") {
  auto m =
      parse_meta_config(named(R"({"delegates":[{"type":"bridge"}],"delegateEnv":["HTTPS_PROXY","NO_PROXY","MY_*"]})"));
  CHECK(m.delegate_env == std::vector<std::string>{"HTTPS_PROXY", "NO_PROXY", "MY_*"});
  CHECK(parse_meta_config(named(R"({"delegates":[{"type":"bridge"}]})")).delegate_env.empty());
}
