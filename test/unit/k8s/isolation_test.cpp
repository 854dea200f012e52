// Tests of the namespace policy: the policy of a parsed config (the keys' types are checked by
// parse_meta_config), the isolation check with the default and a replaced global list, and the
// system-namespace test by namespace.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "cni/netconf.h"
#include "k8s/isolation.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::k8s;

namespace {

using Strings = std::vector<std::string>;

// The policy of a meta-plugin config holding the keys of `conf` (plus a name and a delegate).
NamespacePolicy policy_of(Json conf) {
  conf["name"] = "net";
  conf["delegates"] = Json::parse(R"([{"type":"bridge"}])");
  return namespace_policy_from_config(manifold::cni::parse_meta_config(conf));
}

std::string policy_error(const Json& conf) {
  try {
    policy_of(conf);
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  FAIL("expected a CniError for " << conf.dump());
  return {};
}

}  // namespace

TEST_CASE("namespace policy defaults", "[k8s]") {
  NamespacePolicy p;
  CHECK_FALSE(p.isolation);
  CHECK(p.global_namespaces == Strings{"default"});
  CHECK(p.system_namespaces == Strings{"kube-system"});
  NamespacePolicy from_empty = policy_of(Json::parse(R"({"type":"manifold"})"));
  CHECK_FALSE(from_empty.isolation);
  CHECK(from_empty.global_namespaces == Strings{"default"});
  CHECK(from_empty.system_namespaces == Strings{"kube-system"});
}

TEST_CASE("globalNamespaces is a trimmed comma-separated list", "[k8s]") {
  CHECK(parse_global_namespaces("a, b ,\tc") == Strings{"a", "b", "c"});
  CHECK(parse_global_namespaces("shared") == Strings{"shared"});
  CHECK(parse_global_namespaces("a,,b,") == Strings{"a", "b"});
  CHECK(parse_global_namespaces("") == Strings{"default"});
  CHECK(parse_global_namespaces(" , ") == Strings{"default"});
}

TEST_CASE("namespace policy from the meta-plugin config", "[k8s]") {
  NamespacePolicy p = policy_of(Json::parse(
      R"({"namespaceIsolation":true,"globalNamespaces":"shared, infra","systemNamespaces":["kube-system","ops"]})"));
  CHECK(p.isolation);
  CHECK(p.global_namespaces == Strings{"shared", "infra"});
  CHECK(p.system_namespaces == Strings{"kube-system", "ops"});

  CHECK(policy_of(Json::parse(R"({"systemNamespaces":[]})")).system_namespaces.empty());
  CHECK(policy_of(Json::parse(R"({"systemNamespaces":null})")).system_namespaces == Strings{"kube-system"});

  CHECK(policy_error(Json::parse(R"({"namespaceIsolation":"true"})")) ==
        "invalid config: key \"namespaceIsolation\" must be a boolean");
  CHECK(policy_error(Json::parse(R"({"globalNamespaces":["a"]})")) ==
        "invalid config: key \"globalNamespaces\" must be a string");
  CHECK(policy_error(Json::parse(R"({"systemNamespaces":"kube-system"})")) ==
        "invalid config: key \"systemNamespaces\" must be a list of strings");
  CHECK(policy_error(Json::parse(R"({"systemNamespaces":["a",1]})")) ==
        "invalid config: key \"systemNamespaces\" must be a list of strings");
}

TEST_CASE("isolation off allows any reference", "[k8s]") {
  NamespacePolicy p;
  CHECK_NOTHROW(check_isolation(p, "team-a", "team-b"));
}

TEST_CASE("isolation with the default global namespace", "[k8s]") {
  NamespacePolicy p;
  p.isolation = true;
  CHECK_NOTHROW(check_isolation(p, "team-a", "team-a"));
  CHECK_NOTHROW(check_isolation(p, "team-a", "default"));
  try {
    check_isolation(p, "team-a", "team-b");
    FAIL("expected an isolation error");
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    CHECK(e.msg() ==
          "GetNetworkDelegates: namespace isolation enabled, annotation violates permission, pod is in namespace "
          "team-a but refers to target namespace team-b");
  }
}

TEST_CASE("isolation with a replaced global list", "[k8s]") {
  NamespacePolicy p;
  p.isolation = true;
  p.global_namespaces = parse_global_namespaces("shared,infra");
  CHECK_NOTHROW(check_isolation(p, "team-a", "shared"));
  CHECK_NOTHROW(check_isolation(p, "team-a", "infra"));
  CHECK_THROWS_AS(check_isolation(p, "team-a", "default"), CniError);
  CHECK_THROWS_AS(check_isolation(p, "team-a", "team-b"), CniError);
}

TEST_CASE("system namespaces are matched by namespace", "[k8s]") {
  NamespacePolicy p;
  CHECK(is_system_namespace(p, "kube-system"));
  CHECK_FALSE(is_system_namespace(p, "default"));
  CHECK_FALSE(is_system_namespace(p, "kube-system-2"));
  p.system_namespaces = {"ops", "infra"};
  CHECK(is_system_namespace(p, "ops"));
  CHECK_FALSE(is_system_namespace(p, "kube-system"));
  p.system_namespaces.clear();
  CHECK_FALSE(is_system_namespace(p, "ops"));
}
