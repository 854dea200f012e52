// The shipped MultiNetworkPolicy CRD (conf/multi-network-policy-crd.yaml): the upstream CRD's names
// (so it replaces that CRD in place), a structural schema (every node typed, or int-or-string), and
// exactly the spec fields lib/policy reads — a field missing from the schema would be pruned by the
// API server and silently widen or narrow a policy. And the shipped example policy validates.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "policy/policy.h"
#include "validate/manifest_validate.h"

using namespace manifold;

namespace {

Json shipped(const std::string& path) {
  std::ifstream in(std::string(MANIFOLD_SOURCE_DIR) + "/" + path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<Json> docs = validate::load_manifests(text.str());
  REQUIRE(docs.size() == 1);
  return docs[0];
}

Json crd() { return shipped("conf/multi-network-policy-crd.yaml"); }

// The named children of a schema node, through array items.
const Json& properties_of(const Json& node) {
  static const Json kNone = Json::object();
  const Json* n = &node;
  while (n->value("type", "") == "array") n = &(*n)["items"];
  const auto it = n->find("properties");
  return it == n->end() ? kNone : *it;
}

void check_structural(const Json& node, const std::string& path) {
  INFO(path);
  if (node.value("x-kubernetes-int-or-string", false)) {
    CHECK(node["anyOf"] == Json::parse(R"([{"type": "integer"}, {"type": "string"}])"));
    return;
  }
  const std::string type = node.value("type", "");
  CHECK((type == "object" || type == "array" || type == "string" || type == "integer" || type == "boolean"));
  if (const auto p = node.find("properties"); p != node.end())
    for (const auto& [name, child] : p->items()) check_structural(child, path + "." + name);
  if (const auto items = node.find("items"); items != node.end()) check_structural(*items, path + "[]");
  if (const auto extra = node.find("additionalProperties"); extra != node.end() && extra->is_object())
    check_structural(*extra, path + "{}");
}

// `read` lists the fields lib/policy reads below a node (null: a leaf).
void check_fields(const Json& read, const Json& node, const std::string& path) {
  INFO(path);
  std::vector<std::string> want, have;
  for (const auto& [name, sub] : read.items()) want.push_back(name);
  for (const auto& [name, sub] : properties_of(node).items()) have.push_back(name);
  std::sort(want.begin(), want.end());
  std::sort(have.begin(), have.end());
  CHECK(have == want);
  for (const auto& [name, sub] : read.items())
    if (!sub.is_null() && properties_of(node).contains(name))
      check_fields(sub, properties_of(node)[name], path + "." + name);
}

}  // namespace

TEST_CASE("policy: the shipped CRD has the upstream names", "[policy]") {
  const Json c = crd();
  CHECK(c["kind"] == "CustomResourceDefinition");
  CHECK(c["metadata"]["name"] == "multi-networkpolicies.k8s.cni.cncf.io");
  CHECK(c["spec"]["group"] == "k8s.cni.cncf.io");
  CHECK(c["spec"]["scope"] == "Namespaced");
  CHECK(c["spec"]["names"]["plural"] == "multi-networkpolicies");
  CHECK(c["spec"]["names"]["kind"] == "MultiNetworkPolicy");
  REQUIRE(c["spec"]["versions"].size() == 1);
  CHECK(c["spec"]["versions"][0]["name"] == "v1beta1");
  CHECK(c["spec"]["versions"][0]["storage"] == true);
}

TEST_CASE("policy: the shipped CRD's schema is structural and keeps every field policies use", "[policy]") {
  const Json schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  check_structural(schema, "$");
  const Json selector = Json::parse(R"({"matchLabels": null, "matchExpressions": {"key": null, "operator": null,
                                        "values": null}})");
  const Json peers = {{"podSelector", selector},
                      {"namespaceSelector", selector},
                      {"ipBlock", {{"cidr", nullptr}, {"except", nullptr}}}};
  const Json ports = {{"protocol", nullptr}, {"port", nullptr}, {"endPort", nullptr}};
  const Json read = {{"podSelector", selector},
                     {"policyTypes", nullptr},
                     {"ingress", {{"from", peers}, {"ports", ports}}},
                     {"egress", {{"to", peers}, {"ports", ports}}}};
  const Json& spec = schema["properties"]["spec"];
  check_fields(read, spec, "spec");
  CHECK(spec["required"] == Json::array({"podSelector"}));
}

TEST_CASE("policy: the example policy validates and covers the example macvlan NAD", "[policy]") {
  const policy::MultiNetworkPolicy p = policy::read_policy(shipped("examples/multi-network-policy.yaml"));
  INFO(p.error);
  CHECK(p.valid());
  CHECK(p.covers("default/macvlan-conf"));
  CHECK((p.ingress && p.egress));
  CHECK(p.ingress_rules.size() == 2);
}
