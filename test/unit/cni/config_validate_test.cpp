// Unit tests for offline config validation: every problem of a broken config is reported at its
// JSON path (not only the first), valid configs give no errors, conflists wrapping the manifold
// plugin and plain network configs are recognised, and scoping objects reach the checker.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cni/config_validate.h"

using namespace manifold;
using namespace manifold::cni;

namespace {

std::vector<std::string> errors_of(const Problems& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems)
    if (!p.warning) out.push_back(format_problem(p));
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("a valid meta config has no errors", "[cni]") {
  auto problems = validate_config_text(R"({
    "cniVersion": "1.0.0", "name": "manifold-cni-network", "type": "manifold",
    "kubeconfig": "/etc/cni/net.d/manifold.d/manifold.kubeconfig",
    "logLevel": "Debug", "logOptions": {"maxSize": 10, "maxBackups": 2, "maxAge": 1, "compress": false},
    "capabilities": {"portMappings": true},
    "delegates": [{"cniVersion": "1.0.0", "name": "cbr0", "plugins": [
        {"type": "bridge", "ipam": {"type": "host-local"}}, {"type": "portmap", "capabilities": {"portMappings": true}}]}]
  })");
  CHECK(errors_of(problems).empty());
  CHECK_FALSE(has_errors(problems));
}

TEST_CASE("every problem of a broken meta config is reported with its path", "[cni]") {
  auto problems = validate_config_text(R"({
    "cniVersion": "9.9.9", "type": "manifold", "logLevel": "loud", "logToStderr": "yes",
    "logOptions": {"maxSize": -1, "compress": 1, "rotate": true},
    "readinessTimeout": 99999, "defaultNetworks": ["a", 3], "cniDir": "",
    "capabilities": {"portMappings": "true"}, "mesh": [], "delegateEnv": ["NO_PROXY", "A-B", 3],
    "delegates": [
      {"name": "ok", "type": "bridge"},
      {"name": "bad", "type": ""},
      {"name": "path", "type": "../evil"},
      {"name": "list", "plugins": [{"type": "macvlan"}, {"ipam": {"type": 7}}, 5]},
      {"name": "none"},
      "string",
      {"name": "empty", "plugins": []}
    ]
  })");
  auto errors = errors_of(problems);
  CHECK(contains(
      errors,
      "$.cniVersion: unsupported CNI version \"9.9.9\" (supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)"));
  CHECK(contains(errors, "$.logLevel: must be one of panic, error, verbose, debug"));
  CHECK(contains(errors, "$.logToStderr: must be a boolean (true or false)"));
  CHECK(contains(errors, "$.logOptions.maxSize: must be between 0 and 1048576"));
  CHECK(contains(errors, "$.logOptions.compress: must be a boolean (true or false)"));
  CHECK(contains(errors, "$.readinessTimeout: must be between 0 and 3600"));
  CHECK(contains(errors, "$.defaultNetworks[1]: must be a string"));
  CHECK(contains(errors, "$.cniDir: must be a non-empty string"));
  CHECK(contains(errors, "$.capabilities.portMappings: must be a boolean"));
  CHECK(contains(errors, "$.mesh: must be an object"));
  CHECK(contains(errors, "$.delegates[1].type: must be a non-empty string"));
  CHECK(contains(errors, "$.delegates[2].type: must be a plugin file name, not a path (no '/', '.' or '..')"));
  CHECK(contains(errors, "$.delegates[3].plugins[1].type: is required"));
  CHECK(contains(errors, "$.delegates[3].plugins[1].ipam.type: must be a non-empty string"));
  CHECK(contains(errors, "$.delegates[3].plugins[2]: must be an object"));
  CHECK(contains(errors, "$.delegates[4]: has neither \"type\" (a conf) nor \"plugins\" (a conflist)"));
  CHECK(contains(errors, "$.delegates[5]: must be an object (a network config)"));
  CHECK(contains(errors, "$.delegates[6].plugins: must be a non-empty list of plugin objects"));
  CHECK(contains(errors, "$.delegateEnv[1]: must be a variable name (letters, digits, _) or a prefix ending in *"));
  CHECK(contains(errors, "$.delegateEnv[2]: must be a variable name (letters, digits, _) or a prefix ending in *"));
  CHECK(contains(errors, "$.name: must be a non-empty string (the network name; CNI requires it)"));
  CHECK(errors.size() == 21);
  // The unknown logOptions key is only a warning.
  CHECK(std::any_of(problems.begin(), problems.end(),
                    [](const Problem& p) { return p.warning && p.path == "$.logOptions.rotate"; }));
}

TEST_CASE("a config without delegates or clusterNetwork is invalid", "[cni]") {
  auto errors =
      errors_of(validate_config_text(R"({"cniVersion":"0.3.1","name":"n","type":"manifold","delegates":[]})"));
  CHECK(errors == std::vector<std::string>{"$: at least one delegate or clusterNetwork must be specified"});
  errors =
      errors_of(validate_config_text(R"({"cniVersion":"0.3.1","name":"n","type":"manifold","clusterNetwork":"cbr0"})"));
  CHECK(errors.empty());
  errors = errors_of(validate_config_text(R"({"cniVersion":"0.3.1","name":"n","delegates":{"type":"x"}})"));
  CHECK(errors == std::vector<std::string>{"$.delegates: must be a list of network configs", "$.type: is required"});
}

TEST_CASE("near-miss keys and ignored delegates are warnings", "[cni]") {
  auto problems = validate_config_text(R"({"cniVersion":"1.0.0","name":"n","type":"manifold","clusterNetwork":"k8s",
      "readinessIndicatorFile":"/run/ready","delegates":[{"name":"a","type":"bridge"}],"unrelated":1})");
  CHECK_FALSE(has_errors(problems));
  std::vector<std::string> all;
  for (const auto& p : problems) all.push_back(format_problem(p));
  CHECK(contains(all,
                 "warning: $.readinessIndicatorFile: unknown key, ignored; did you mean "
                 "\"readinessindicatorfile\"? (keys are case-sensitive)"));
  CHECK(contains(all, "warning: $.delegates: is ignored because clusterNetwork is set"));
  CHECK(all.size() == 2);
}

TEST_CASE("a conflist wrapping the manifold plugin validates the plugin as a meta config", "[cni]") {
  auto problems = validate_config_text(R"({"cniVersion":"1.0.0","name":"manifold-cni-network","plugins":[
      {"type":"manifold","logLevel":3,"delegates":[{"cniVersion":"1.0.0","name":"k8s","type":"ptp"}]},
      {"type":"portmap","capabilities":{"portMappings":true}}]})");
  CHECK(errors_of(problems) == std::vector<std::string>{"$.plugins[0].logLevel: must be a string"});
  problems = validate_config_text(R"({"cniVersion":"2.0","plugins":[{"type":"bridge"}]})");
  CHECK(
      errors_of(problems) ==
      std::vector<std::string>{
          "$.cniVersion: unsupported CNI version \"2.0\" (supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)",
          "$.name: must be a non-empty string (the network name)"});
}

TEST_CASE("plain network configs and syntax errors", "[cni]") {
  CHECK(
      errors_of(validate_config_text(R"({"cniVersion":"0.4.0","name":"n","type":"macvlan","master":"eth1"})")).empty());
  auto errors = errors_of(validate_config_text(R"({"cniVersion":"0.4.0","name":"n","type":"a/b"})"));
  CHECK(errors == std::vector<std::string>{"$.type: must be a plugin file name, not a path (no '/', '.' or '..')"});
  errors = errors_of(validate_config_text("{\"type\": \"x\",,}"));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].rfind("$: not valid JSON (syntax error at byte ", 0) == 0);
  CHECK(errors_of(validate_config_text("[1,2]")) == std::vector<std::string>{"$: must be a JSON object"});
}

TEST_CASE("scoping objects are passed to the checker with their paths", "[cni]") {
  std::vector<std::string> seen;
  ScopingChecker checker = [&](std::string_view key, const Json& value, const std::string& path, Problems& out) {
    seen.push_back(std::string(key) + "@" + path);
    if (value.contains("inboundPort") && !value["inboundPort"].is_number_integer())
      out.push_back({json_path_key(path, "inboundPort"), "must be an integer"});
  };
  auto problems =
      validate_config_text(R"({"cniVersion":"1.0.0","name":"n","type":"manifold","sourceRouting":{"enabled":true},
      "delegates":[{"name":"a","type":"bridge"},
                   {"name":"b","type":"macvlan","mesh":{"inboundPort":"x"}},
                   {"name":"c","plugins":[{"type":"macvlan","sourceRouting":{}},{"type":"tuning"}]}]})",
                           checker);
  CHECK(seen == std::vector<std::string>{"sourceRouting@$.sourceRouting", "mesh@$.delegates[1].mesh",
                                         "sourceRouting@$.delegates[2].plugins[0].sourceRouting"});
  CHECK(errors_of(problems) == std::vector<std::string>{"$.delegates[1].mesh.inboundPort: must be an integer"});
}

TEST_CASE("json paths quote keys that are not identifiers", "[cni]") {
  CHECK(json_path_key("$", "delegates") == "$.delegates");
  CHECK(json_path_key("$.metadata.annotations", "k8s.v1.cni.cncf.io/networks") ==
        "$.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"]");
  CHECK(json_path_index("$.plugins", 3) == "$.plugins[3]");
  CHECK(is_plain_plugin_type("bridge"));
  CHECK_FALSE(is_plain_plugin_type(".."));
  CHECK_FALSE(is_plain_plugin_type("/usr/bin/x"));
  CHECK_FALSE(is_plain_plugin_type(""));
}
