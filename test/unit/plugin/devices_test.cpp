// Tests of the device path through the CNI verbs with every side effect faked: a NAD naming a
// resource gets the kubelet's next device (PodResources first, the checkpoint when no kubelet
// serves it, DRA merged in), the ID reaches the delegate as the reference lists, the device
// plugin's device-info is copied to the attachment's own file (0444) and reported in network-status,
// and removed by DEL and by a rolled-back ADD; no source is asked when no NAD names a resource; a
// kubelet that fails and more NADs than devices fail the ADD with nothing left behind.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "kubelet/grpc_call.h"
#include "plugin/cni/verbs.h"
#include "plugin/fakes.h"
#include "plugin/kube_fixtures.h"
#include "podresources.pb-c.h"

using manifold::Json;
using manifold::test::World;
using namespace manifold::test::kube;

namespace {

constexpr const char* kSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";
constexpr const char* kCheckpoint = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint";
constexpr const char* kResource = "example.com/sriov";

/// A serialised ListPodResourcesResponse: pod team-a/web-1 with `ids` of kResource, and another pod
/// with a device that must never be handed out.
std::string kubelet_answer(std::vector<std::string> ids) {
  std::vector<char*> ptrs;
  for (auto& s : ids) ptrs.push_back(s.data());
  char other_id[] = "vf-of-another-pod";
  char* other_ptrs[] = {other_id};
  V1__ContainerDevices mine = V1__CONTAINER_DEVICES__INIT, theirs = V1__CONTAINER_DEVICES__INIT;
  mine.resource_name = theirs.resource_name = const_cast<char*>(kResource);
  mine.n_device_ids = ptrs.size();
  mine.device_ids = ptrs.data();
  theirs.n_device_ids = 1;
  theirs.device_ids = other_ptrs;
  V1__ContainerDevices* my_devices[] = {&mine};
  V1__ContainerDevices* their_devices[] = {&theirs};
  V1__ContainerResources c1 = V1__CONTAINER_RESOURCES__INIT, c2 = V1__CONTAINER_RESOURCES__INIT;
  c1.n_devices = c2.n_devices = 1;
  c1.devices = my_devices;
  c2.devices = their_devices;
  V1__ContainerResources* cs1[] = {&c1};
  V1__ContainerResources* cs2[] = {&c2};
  V1__PodResources p1 = V1__POD_RESOURCES__INIT, p2 = V1__POD_RESOURCES__INIT;
  p1.name = const_cast<char*>("web-1");
  p1.namespace_ = const_cast<char*>("team-a");
  p2.name = const_cast<char*>("web-2");
  p2.namespace_ = const_cast<char*>("team-a");
  p1.n_containers = p2.n_containers = 1;
  p1.containers = cs1;
  p2.containers = cs2;
  V1__PodResources* pods[] = {&p2, &p1};
  V1__ListPodResourcesResponse r = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
  r.n_pod_resources = 2;
  r.pod_resources = pods;
  std::string out(v1__list_pod_resources_response__get_packed_size(&r), '\0');
  v1__list_pod_resources_response__pack(&r, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

Json device_nad(const std::string& name, const std::string& resource = kResource) {
  Json nad =
      nad_json("team-a", name,
               R"({"cniVersion":"1.0.0","type":"sriov","capabilities":{"deviceID":true,"CNIDeviceInfoFile":true}})");
  if (!resource.empty()) nad["metadata"]["annotations"] = {{"k8s.v1.cni.cncf.io/resourceName", resource}};
  return nad;
}

Json device_config(World& w) {
  Json c = kube_config(w);
  c["deviceInfoDir"] = "/devinfo";
  return c;
}

std::string cni_info_path(const std::string& nad, const std::string& ifname) {
  return "/devinfo/cni/team-a-" + nad + "-ctr1_" + ifname;
}

/// A device plugin's device-info file for `id`.
void add_dp_file(World& w, const std::string& id, const std::string& content) {
  const std::string path = "/devinfo/dp/example.com-sriov-" + id + "-device.json";
  w.files->add(path, content);
  w.existing_files.insert(path);
}

std::string pci_info(const std::string& address) {
  return R"({"type":"pci","version":"1.1.0","pci":{"pci-address":")" + address + R"("}})";
}

/// Scripts GET pod (networks `networks`), GET of each NAD, the status PUT and events.
void script_pod(World& w, const std::string& networks, const std::vector<Json>& nads) {
  w.http.push_response(200, pod_with_networks(networks).dump());
  for (const auto& n : nads) w.http.push_response(200, n.dump());
  w.http.push_response(200, pod_with_networks(networks, "uid-1", "43").dump());
  script_events(w, static_cast<int>(nads.size()) + 1);
}

}  // namespace

TEST_CASE("devices: each NAD of a resource gets the next kubelet device, its device-info and status",
          "[plugin][devices]") {
  World w;
  setup_kube(w);
  w.existing_files.insert(kSocket);
  w.pod_resources = [](const std::string& socket, std::chrono::milliseconds timeout) {
    CHECK(socket == kSocket);
    CHECK(timeout == std::chrono::seconds(10));
    return kubelet_answer({"vf1", "vf0"});
  };
  add_dp_file(w, "vf0", pci_info("0000:af:06.0"));
  add_dp_file(w, "vf1", pci_info("0000:af:06.1"));
  script_pod(w, "sriov-a,sriov-b", {device_nad("sriov-a"), device_nad("sriov-b")});
  Json config = device_config(w);
  auto out = w.run("ADD", config, with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  CHECK(w.kubelet_calls == 1);

  auto calls = w.calls();
  REQUIRE(calls.size() == 3);
  for (std::size_t i = 1; i < 3; ++i) {
    const std::string id = i == 1 ? "vf0" : "vf1";
    const std::string ifname = "net" + std::to_string(i);
    Json c = calls[i].config();
    CHECK(c["deviceID"] == id);
    CHECK(c["pciBusID"] == id);
    CHECK(c["runtimeConfig"]["deviceID"] == id);
    CHECK(c["runtimeConfig"]["CNIDeviceInfoFile"] == cni_info_path(i == 1 ? "sriov-a" : "sriov-b", ifname));
  }
  CHECK(w.file_writer->written() == std::map<std::string, mode_t>{{cni_info_path("sriov-a", "net1"), 0444},
                                                                  {cni_info_path("sriov-b", "net2"), 0444}});
  Json status = status_of_put(w.http.requests()[3]);
  REQUIRE(status.size() == 3);
  CHECK(status[1]["device-info"]["pci"]["pci-address"] == "0000:af:06.0");
  CHECK(status[2]["device-info"]["pci"]["pci-address"] == "0000:af:06.1");

  REQUIRE(w.run("DEL", config, with_args(kPodArgs)).exit_code == 0);
  CHECK(w.file_writer->written().empty());
  CHECK_FALSE(w.files->contains(cni_info_path("sriov-a", "net1")));
  CHECK(w.files->contains("/devinfo/dp/example.com-sriov-vf0-device.json"));  // the device plugin's file stays
}

TEST_CASE("devices: no source is asked when no NAD names a resource", "[plugin][devices]") {
  World w;
  setup_kube(w);
  w.existing_files.insert(kSocket);
  w.existing_files.insert(kCheckpoint);
  w.pod_resources = [](const std::string&, std::chrono::milliseconds) { return kubelet_answer({"vf0"}); };
  script_pod(w, "plain", {device_nad("plain", "")});
  REQUIRE(w.run("ADD", device_config(w), with_args(kPodArgs)).exit_code == 0);
  CHECK(w.kubelet_calls == 0);
  CHECK(std::find(w.files->reads().begin(), w.files->reads().end(), kCheckpoint) == w.files->reads().end());
  CHECK_FALSE(w.calls()[1].config().contains("deviceID"));
}

TEST_CASE("devices: a kubelet that does not serve PodResources falls back to the checkpoint", "[plugin][devices]") {
  World w;
  setup_kube(w);
  w.existing_files.insert(kSocket);  // a socket left behind: connecting is refused (w.pod_resources unset)
  w.existing_files.insert(kCheckpoint);
  w.files->add(kCheckpoint, R"({"Data":{"PodDeviceEntries":[
      {"PodUID":"uid-1","ContainerName":"c","ResourceName":"example.com/sriov","DeviceIDs":{"-1":["cp1","cp0"]}},
      {"PodUID":"uid-2","ContainerName":"c","ResourceName":"example.com/sriov","DeviceIDs":{"-1":["x"]}}]},"Checksum":1})");
  script_pod(w, "sriov-a", {device_nad("sriov-a")});
  REQUIRE(w.run("ADD", device_config(w), with_args(kPodArgs)).exit_code == 0);
  CHECK(w.kubelet_calls == 1);
  CHECK(w.calls()[1].config()["deviceID"] == "cp0");
  CHECK(w.file_writer->written().empty());  // no device plugin file: nothing to pass on
}

TEST_CASE("devices: a failing kubelet or too few devices fail the ADD and leave nothing", "[plugin][devices]") {
  World w;
  setup_kube(w);
  w.existing_files.insert(kSocket);
  add_dp_file(w, "vf0", pci_info("0000:af:06.0"));
  Json config = device_config(w);

  SECTION("kubelet timeout") {
    w.pod_resources = [](const std::string&, std::chrono::milliseconds) -> std::string {
      throw manifold::kubelet::GrpcError(manifold::kubelet::GrpcFailure::Timeout, "gRPC List: no complete answer");
    };
    script_pod(w, "sriov-a", {device_nad("sriov-a")});
    auto out = w.run("ADD", config, with_args(kPodArgs));
    CHECK(error_of(out)["code"] == 108);
    CHECK(error_of(out)["msg"].get<std::string>().find("kubelet") != std::string::npos);
    CHECK(w.calls().empty());  // devices are found while networks resolve: before any delegate runs
  }
  SECTION("more NADs than devices") {
    w.pod_resources = [](const std::string&, std::chrono::milliseconds) { return kubelet_answer({"vf0"}); };
    script_pod(w, "sriov-a,sriov-b", {device_nad("sriov-a"), device_nad("sriov-b")});
    auto out = w.run("ADD", config, with_args(kPodArgs));
    Json e = error_of(out);
    CHECK(e["code"] == 108);
    CHECK(e["msg"].get<std::string>().find("team-a/sriov-b") != std::string::npos);
    CHECK(e["msg"].get<std::string>().find(kResource) != std::string::npos);
  }
  SECTION("the delegate of a device network fails: its device-info file goes with the rollback") {
    w.pod_resources = [](const std::string&, std::chrono::milliseconds) { return kubelet_answer({"vf0"}); };
    w.intercept = [](const manifold::test::Call& c) -> std::optional<manifold::exec::ProcessResult> {
      if (c.type == "sriov" && c.command == "ADD") return manifold::test::cni_error_answer(11, "VF busy");
      return std::nullopt;
    };
    script_pod(w, "sriov-a", {device_nad("sriov-a")});
    CHECK(error_of(w.run("ADD", config, with_args(kPodArgs)))["code"] == 11);
  }
  CHECK(w.file_writer->written().empty());
  CHECK(w.cache.list().empty());
}

TEST_CASE("devices: a malformed device-info file is not passed on, and the ADD succeeds", "[plugin][devices]") {
  World w;
  setup_kube(w);
  w.existing_files.insert(kSocket);
  w.pod_resources = [](const std::string&, std::chrono::milliseconds) { return kubelet_answer({"vf0"}); };
  add_dp_file(w, "vf0", R"({"type":"pci","pci":"not an object"})");
  script_pod(w, "sriov-a", {device_nad("sriov-a")});
  REQUIRE(w.run("ADD", device_config(w), with_args(kPodArgs)).exit_code == 0);
  CHECK(w.file_writer->written().empty());
  CHECK_FALSE(status_of_put(w.http.requests()[2])[1].contains("device-info"));
}

TEST_CASE("devices: DRA claims add their devices to the kubelet's", "[plugin][devices]") {
  World w;
  setup_kube(w);  // no socket, no checkpoint: the devices come from DRA alone
  Json pod = pod_with_networks("sriov-a,sriov-b");
  pod["spec"]["nodeName"] = "node1";
  pod["status"]["resourceClaimStatuses"] = {{{"name", "nic"}, {"resourceClaimName", "web-1-nic"}}};
  w.http.push_response(200, pod.dump());
  w.http.push_response(200, device_nad("sriov-a").dump());
  w.http.push_response(200, device_nad("sriov-b").dump());  // both NADs in one batch
  w.http.push_response(200, R"({"kind":"ResourceClaim","status":{"allocation":{"devices":{"results":[
      {"request":"nic","driver":"sriov.io","pool":"p","device":"d1"},
      {"request":"nic","driver":"sriov.io","pool":"p","device":"d0"}]}}}})");
  w.http.push_response(200, R"({"kind":"ResourceSliceList","items":[{"spec":{"driver":"sriov.io","pool":{"name":"p"},
      "devices":[
        {"name":"d0","attributes":{"k8s.cni.cncf.io/deviceID":{"string":"0000:01:00.0"},
                                   "k8s.cni.cncf.io/resourceName":{"string":"example.com/sriov"}}},
        {"name":"d1","attributes":{"k8s.cni.cncf.io/deviceID":{"string":"0000:01:00.1"},
                                   "k8s.cni.cncf.io/resourceName":{"string":"example.com/sriov"}}}]}}]})");
  w.http.push_response(200, pod.dump());
  script_events(w, 3);
  REQUIRE(w.run("ADD", device_config(w), with_args(kPodArgs)).exit_code == 0);
  CHECK(request_lines(w, 3) ==
        Strings{
            "GET /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/web-1-nic",
            "GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dnode1%2Cspec.driver%3Dsriov.io",
            "PUT " + kPodPath + "/status", "POST " + kEventsPath, "POST " + kEventsPath, "POST " + kEventsPath});
  CHECK(w.calls()[1].config()["deviceID"] == "0000:01:00.0");
  CHECK(w.calls()[2].config()["deviceID"] == "0000:01:00.1");
  CHECK(w.kubelet_calls == 0);
}
