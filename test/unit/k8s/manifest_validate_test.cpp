// Unit tests for manifest validation: YAML/JSON loading with scalar typing, NAD checks with paths
// into the embedded spec.config, pod and pod-template annotation checks, and kind dispatch.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cni/error.h"
#include "k8s/manifest_validate.h"

using namespace manifold;
using namespace manifold::k8s;

namespace {

std::vector<std::string> errors_of(const cni::Problems& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems)
    if (!p.warning) out.push_back(cni::format_problem(p));
  return out;
}

const char* kGoodNads = R"(apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: macvlan-conf
  namespace: default
spec:
  config: |
    {"cniVersion": "1.0.0", "name": "macvlan-conf", "type": "macvlan", "master": "eth1",
     "ipam": {"type": "static"}}
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: tuned
spec:
  config: '{"cniVersion":"0.4.0","name":"tuned","plugins":[{"type":"ipvlan","master":"eth1","ipam":{"type":"host-local","subnet":"10.9.0.0/24"}},{"type":"tuning","sysctl":{"net.ipv4.conf.net1.arp_notify":"1"}}]}'
)";

}  // namespace

TEST_CASE("YAML manifests become JSON with typed plain scalars", "[k8s]") {
  auto docs = load_manifests("a: 1\nb: '2'\nc: true\nd: ~\ne: text\nf: [x, 2.5]\n---\n---\nkind: Pod\n");
  REQUIRE(docs.size() == 2);
  CHECK(docs[0] == Json::parse(R"({"a":1,"b":"2","c":true,"d":null,"e":"text","f":["x",2.5]})"));
  CHECK(docs[1]["kind"] == "Pod");
  CHECK(load_manifests(R"([{"kind":"Pod"},{"kind":"Pod"}])").size() == 2);
  CHECK_THROWS_AS(load_manifests("a: [unclosed\n"), cni::CniError);
}

TEST_CASE("valid NADs produce no errors", "[k8s]") {
  auto reports = validate_manifest_text(kGoodNads, true);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].label == "NetworkAttachmentDefinition default/macvlan-conf");
  CHECK(reports[1].label == "NetworkAttachmentDefinition tuned");
  for (const auto& r : reports) CHECK(errors_of(r.problems).empty());
}

TEST_CASE("broken NADs report paths into spec.config", "[k8s]") {
  auto reports = validate_manifest_text(R"(apiVersion: v1
kind: NetworkAttachmentDefinition
metadata:
  name: Bad_Name
spec:
  config: '{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"bridge"},{"type":"../tuning"},{}]}'
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: notjson
spec:
  config: '{"type": '
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: wrongtype
spec:
  config: '{"cniVersion":"0.3.1","type":""}'
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: empty
spec: {}
)",
                                        true);
  REQUIRE(reports.size() == 4);
  CHECK(errors_of(reports[0].problems) ==
        std::vector<std::string>{
            "$.apiVersion: must be \"k8s.cni.cncf.io/v1\"",
            "$.metadata.name: must be a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.')",
            "$.spec.config.plugins[1].type: must be a plugin file name, not a path (no '/', '.' or '..')",
            "$.spec.config.plugins[2].type: is required"});
  CHECK(errors_of(reports[1].problems) == std::vector<std::string>{"$.spec.config: is not valid JSON"});
  CHECK(errors_of(reports[2].problems) == std::vector<std::string>{"$.spec.config.type: must be a non-empty string"});
  CHECK(errors_of(reports[3].problems).empty());  // empty config = confDir lookup: a warning only
  CHECK(reports[3].problems.size() == 1);
}

TEST_CASE("validate --nad rejects other kinds", "[k8s]") {
  auto reports = validate_manifest_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", true);
  REQUIRE(reports.size() == 1);
  CHECK(errors_of(reports[0].problems) ==
        std::vector<std::string>{"$.kind: must be \"NetworkAttachmentDefinition\" (got \"Pod\")"});
}

TEST_CASE("pod annotations are parsed as the ADD path parses them", "[k8s]") {
  auto reports = validate_manifest_text(R"(apiVersion: v1
kind: Pod
metadata:
  name: ok
  annotations:
    k8s.v1.cni.cncf.io/networks: macvlan-conf@data0, other/tuned
---
apiVersion: v1
kind: Pod
metadata:
  name: json
  annotations:
    k8s.v1.cni.cncf.io/networks: '[{"name":"macvlan-conf","interface":"net1","ips":["10.1.1.5/24"],"cni-args":{"mesh":{"enabled":true}}}]'
---
apiVersion: v1
kind: Pod
metadata:
  name: bad
  annotations:
    k8s.v1.cni.cncf.io/networks: 'a/b/c'
    v1.multus-cni.io/default-network: ''
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dep
spec:
  template:
    metadata:
      annotations:
        k8s.v1.cni.cncf.io/networks: '[{"name":"x","mac":"not-a-mac"}]'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
)",
                                        false);
  REQUIRE(reports.size() == 5);
  CHECK(errors_of(reports[0].problems).empty());
  CHECK(errors_of(reports[1].problems).empty());
  auto bad = errors_of(reports[2].problems);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].rfind("$.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"]: ", 0) == 0);
  CHECK(bad[1].rfind("$.metadata.annotations[\"v1.multus-cni.io/default-network\"]: ", 0) == 0);
  auto dep = errors_of(reports[3].problems);
  REQUIRE(dep.size() == 1);
  CHECK(dep[0].rfind("$.spec.template.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"]: ", 0) == 0);
  CHECK(reports[4].problems.empty());
  CHECK_FALSE(reports[4].checked);
  CHECK(reports[0].checked);
}

TEST_CASE("scoping keys in cni-args reach the checker", "[k8s]") {
  std::vector<std::string> seen;
  cni::ScopingChecker checker = [&](std::string_view key, const Json&, const std::string& path, cni::Problems& out) {
    seen.push_back(std::string(key) + "@" + path);
    out.push_back({path, "rejected by test"});
  };
  auto reports = validate_manifest_text(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{
      "k8s.v1.cni.cncf.io/networks":"[{\"name\":\"a\"},{\"name\":\"b\",\"cni-args\":{\"sourceRouting\":{}}}]"}}})",
                                        false, checker);
  REQUIRE(reports.size() == 1);
  std::string path = "$.metadata.annotations[\"k8s.v1.cni.cncf.io/networks\"][1][\"cni-args\"].sourceRouting";
  CHECK(seen == std::vector<std::string>{"sourceRouting@" + path});
  CHECK(errors_of(reports[0].problems) == std::vector<std::string>{path + ": rejected by test"});
}
