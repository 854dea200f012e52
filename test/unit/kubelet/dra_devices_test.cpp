// Tests of DRA resolution against a scripted API: claims from the pod's status and spec, slices
// listed once per driver on the pod's node, results mapped through the two device attributes,
// Multus's skips (device in no slice, no resourceName) and errors (claim without allocation), and
// the extended-resource claim's stricter rules.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "cni/error.h"
#include "kubelet/dra_devices.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::kubelet;

namespace {

class ScriptedDra final : public DraApi {
 public:
  std::map<std::string, Json> claims;
  std::map<std::string, Json> slices_by_driver;
  std::vector<std::string> calls;
  Json get_resource_claim(const std::string& ns, const std::string& name) override {
    calls.push_back("GET " + ns + "/" + name);
    auto it = claims.find(name);
    if (it == claims.end()) throw CniError(manifold::cni::ErrorCode::Kubernetes, "claim " + name + " not found");
    return it->second;
  }
  Json list_resource_slices(const std::string& node, const std::string& driver) override {
    calls.push_back("LIST " + node + " " + driver);
    auto it = slices_by_driver.find(driver);
    return it == slices_by_driver.end() ? Json{{"items", Json::array()}} : it->second;
  }
};

Json result(const std::string& request, const std::string& driver, const std::string& pool, const std::string& device) {
  return {{"request", request}, {"driver", driver}, {"pool", pool}, {"device", device}};
}

Json claim(std::vector<Json> results) {
  return {{"kind", "ResourceClaim"}, {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

Json device(const std::string& name, const std::string& id, const std::string& resource) {
  Json attrs = Json::object();
  if (!id.empty()) attrs["k8s.cni.cncf.io/deviceID"] = {{"string", id}};
  if (!resource.empty()) attrs["k8s.cni.cncf.io/resourceName"] = {{"string", resource}};
  attrs["other"] = {{"int", 3}};
  return {{"name", name}, {"attributes", attrs}};
}

Json slices(const std::string& driver, const std::string& pool, std::vector<Json> devices) {
  return {{"items", {{{"spec", {{"driver", driver}, {"pool", {{"name", pool}}}, {"devices", devices}}}}}}};
}

Json pod(std::vector<std::string> status_claims, Json extra = Json::object()) {
  Json p = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
            {"spec", {{"nodeName", "node1"}}},
            {"status", Json::object()}};
  Json statuses = Json::array();
  for (const auto& c : status_claims) statuses.push_back({{"name", "req-" + c}, {"resourceClaimName", c}});
  p["status"]["resourceClaimStatuses"] = statuses;
  p.merge_patch(extra);
  return p;
}

unsigned code_of(const Json& p, ScriptedDra& api, std::string* msg = nullptr) {
  try {
    dra_pod_devices(p, api);
  } catch (const CniError& e) {
    if (msg) *msg = e.msg();
    return e.code();
  }
  return 0;
}

}  // namespace

TEST_CASE("DRA: claim results become devices of the resource their slice attribute names", "[kubelet]") {
  ScriptedDra api;
  api.claims["c1"] = claim({result("nic", "sriov.io", "pool1", "vf-1"), result("nic", "sriov.io", "pool1", "vf-0")});
  api.claims["c2"] = claim({result("gpu", "gpu.io", "p", "g0")});
  api.slices_by_driver["sriov.io"] =
      slices("sriov.io", "pool1",
             {device("vf-0", "0000:af:06.0", "intel.com/sriov"), device("vf-1", "0000:af:06.1", "intel.com/sriov")});
  api.slices_by_driver["gpu.io"] = slices("gpu.io", "p", {device("g0", "gpu0", "")});  // no resourceName: skipped
  CHECK(dra_pod_devices(pod({"c1", "c2"}), api) == DeviceTable{{"intel.com/sriov", {"0000:af:06.0", "0000:af:06.1"}}});
  CHECK(api.calls == std::vector<std::string>{"GET ns/c1", "LIST node1 sriov.io", "GET ns/c2", "LIST node1 gpu.io"});
}

TEST_CASE("DRA: claims the pod names in its spec count too, each fetched once", "[kubelet]") {
  ScriptedDra api;
  api.claims["shared"] = claim({result("nic", "d", "p", "vf")});
  api.slices_by_driver["d"] = slices("d", "p", {device("vf", "id1", "r")});
  Json p = pod(
      {"shared"},
      {{"spec",
        {{"resourceClaims",
          {{{"name", "a"}, {"resourceClaimName", "shared"}}, {{"name", "b"}, {"resourceClaimTemplateName", "t"}}}}}}});
  CHECK(pod_has_resource_claims(p));
  CHECK(dra_pod_devices(p, api) == DeviceTable{{"r", {"id1"}}});
  CHECK(api.calls.size() == 2);
  CHECK_FALSE(pod_has_resource_claims(pod({})));
}

TEST_CASE("DRA: a device in no slice is skipped; a claim without allocation is an error", "[kubelet]") {
  ScriptedDra api;
  api.claims["c"] = claim({result("nic", "d", "p", "gone"), result("nic", "d", "other-pool", "vf")});
  api.slices_by_driver["d"] = slices("d", "p", {device("vf", "id", "r"), device("noid", "", "r")});
  CHECK(dra_pod_devices(pod({"c"}), api).empty());
  api.claims["pending"] = {{"kind", "ResourceClaim"}, {"status", Json::object()}};
  std::string msg;
  CHECK(code_of(pod({"pending"}), api, &msg) == 108u);
  CHECK(msg.find("has no device allocation") != std::string::npos);
  CHECK(code_of(pod({"missing"}), api) == 103u);  // the API's own error passes through
}

TEST_CASE("DRA: a status entry without a claim name is skipped; wrong types are decoding errors", "[kubelet]") {
  ScriptedDra api;
  Json p = pod({});
  p["status"]["resourceClaimStatuses"] = {{{"name", "templated-but-not-created"}, {"resourceClaimName", nullptr}}};
  CHECK(dra_pod_devices(p, api).empty());
  CHECK(api.calls.empty());
  p["status"]["resourceClaimStatuses"] = {{{"name", "x"}, {"resourceClaimName", 5}}};
  CHECK(code_of(p, api) == 6u);
  p["status"]["resourceClaimStatuses"] = "not a list";
  CHECK(code_of(p, api) == 6u);
  api.claims["c"] = claim({result("nic", "d", "p", "vf")});
  api.slices_by_driver["d"] = {{"items", "nope"}};
  CHECK(code_of(pod({"c"}), api) == 6u);
}

TEST_CASE("DRA: the extended-resource claim maps every request to its resource, strictly", "[kubelet]") {
  ScriptedDra api;
  api.claims["ext"] = claim({result("r0", "d", "p", "vf0"), result("r1", "d", "p", "vf1")});
  api.slices_by_driver["d"] = slices("d", "p", {device("vf0", "id0", "intel.com/sriov"), device("vf1", "id1", "")});
  auto ext = [](Json mappings) {
    return pod(
        {},
        {{"status", {{"extendedResourceClaimStatus", {{"resourceClaimName", "ext"}, {"requestMappings", mappings}}}}}});
  };
  Json ok = ext({{{"containerName", "c"}, {"resourceName", "intel.com/sriov"}, {"requestName", "r0"}}});
  CHECK(pod_has_resource_claims(ok));
  CHECK(dra_pod_devices(ok, api) == DeviceTable{{"intel.com/sriov", {"id0"}}});
  std::string msg;
  CHECK(code_of(ext({{{"resourceName", "intel.com/sriov"}, {"requestName", "r9"}}}), api, &msg) == 108u);
  CHECK(msg.find("not found in") != std::string::npos);
  CHECK(code_of(ext({{{"resourceName", "intel.com/sriov"}, {"requestName", "r1"}}}), api, &msg) == 108u);
  CHECK(msg.find("has no") != std::string::npos);
  CHECK(code_of(ext({{{"resourceName", "other.com/x"}, {"requestName", "r0"}}}), api, &msg) == 108u);
  CHECK(msg.find("other.com/x") != std::string::npos);
  api.slices_by_driver["d"] = slices("d", "p", {});
  CHECK(code_of(ok, api, &msg) == 108u);
  CHECK(msg.find("in no ResourceSlice") != std::string::npos);
}
