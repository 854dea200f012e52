// Tests of the kubelet device sources as data: the in-order hand-out and its exhaustion error, the
// delegate injection, the strict checkpoint reader (both DeviceIDs shapes, other pods ignored, every
// malformed shape an error naming the file), and the PodResources decoder over messages packed by
// protobuf-c from the same .proto (name + namespace match, unknown fields skipped, garbage refused).
#include <catch2/catch.hpp>

#include <string>

#include "cni/error.h"
#include "kubelet/device_allocation.h"
#include "kubelet/device_checkpoint.h"
#include "kubelet/pod_resources.h"
#include "podresources.pb-c.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::kubelet;

namespace {

unsigned error_code(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const CniError& e) {
    if (msg) *msg = e.msg();
    return e.code();
  }
  return 0;
}

/// One pod's entry of a ListPodResourcesResponse, built with protobuf-c's structs.
struct PodMessage {
  std::vector<std::string> ids_a, ids_b;
  std::vector<char*> ptrs_a, ptrs_b;
  V1__ContainerDevices dev_a = V1__CONTAINER_DEVICES__INIT, dev_b = V1__CONTAINER_DEVICES__INIT;
  V1__ContainerDevices* devs[2] = {&dev_a, &dev_b};
  int64_t cpus[2] = {3, 4};
  V1__ContainerResources container = V1__CONTAINER_RESOURCES__INIT;
  V1__ContainerResources* containers[1] = {&container};
  V1__PodResources pod = V1__POD_RESOURCES__INIT;

  PodMessage(const char* name, const char* ns, std::vector<std::string> a, std::vector<std::string> b)
      : ids_a(std::move(a)), ids_b(std::move(b)) {
    for (auto& s : ids_a) ptrs_a.push_back(s.data());
    for (auto& s : ids_b) ptrs_b.push_back(s.data());
    dev_a.resource_name = const_cast<char*>("example.com/sriov");
    dev_a.n_device_ids = ptrs_a.size();
    dev_a.device_ids = ptrs_a.data();
    dev_b.resource_name = const_cast<char*>("example.com/rdma");
    dev_b.n_device_ids = ptrs_b.size();
    dev_b.device_ids = ptrs_b.data();
    container.name = const_cast<char*>("app");
    container.n_devices = 2;
    container.devices = devs;
    container.n_cpu_ids = 2;  // a field manifold does not read
    container.cpu_ids = cpus;
    pod.name = const_cast<char*>(name);
    pod.namespace_ = const_cast<char*>(ns);
    pod.n_containers = 1;
    pod.containers = containers;
  }
};

std::string pack(std::vector<V1__PodResources*> pods) {
  V1__ListPodResourcesResponse r = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
  r.n_pod_resources = pods.size();
  r.pod_resources = pods.data();
  std::string out(v1__list_pod_resources_response__get_packed_size(&r), '\0');
  v1__list_pod_resources_response__pack(&r, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

}  // namespace

TEST_CASE("device allocation: each network takes the next sorted ID; exhaustion names the resource", "[kubelet]") {
  DeviceAllocator devices(DeviceTable{{"r", {"vf2", "vf1", "vf1"}}});
  CHECK(devices.take("r", "ns/a") == "vf1");
  CHECK(devices.take("r", "ns/b") == "vf2");
  std::string msg;
  CHECK(error_code([&] { devices.take("r", "ns/c"); }, &msg) == 108u);
  CHECK(msg.find("ns/c") != std::string::npos);
  CHECK(msg.find("\"r\"") != std::string::npos);
  CHECK(msg.find("2 device(s)") != std::string::npos);
  CHECK(error_code([&] { devices.take("other", "ns/d"); }, &msg) == 108u);
  CHECK(msg.find("allocated no device") != std::string::npos);
}

TEST_CASE("device allocation: the loader runs once, on the first request only", "[kubelet]") {
  int loads = 0;
  DeviceAllocator devices([&] {
    ++loads;
    return DeviceTable{{"r", {"b", "a"}}};
  });
  CHECK(loads == 0);
  CHECK_FALSE(devices.loaded());
  CHECK(devices.take("r", "n") == "a");
  CHECK(devices.take("r", "n") == "b");
  CHECK(loads == 1);
  DeviceTable merged{{"r", {"z"}}};
  merge_device_tables(merged, DeviceTable{{"r", {"a"}}, {"s", {"x"}}});
  CHECK(merged == DeviceTable{{"r", {"a", "z"}}, {"s", {"x"}}});
}

TEST_CASE("device allocation: the ID goes to a conf and to every plugin of a conflist", "[kubelet]") {
  Json conf = {{"type", "sriov"}};
  inject_device_id(conf, "0000:af:06.0");
  CHECK(conf["deviceID"] == "0000:af:06.0");
  CHECK(conf["pciBusID"] == "0000:af:06.0");
  Json list = {{"plugins", {{{"type", "sriov"}}, {{"type", "tuning"}}}}};
  inject_device_id(list, "id");
  for (const auto& p : list["plugins"]) {
    CHECK(p["deviceID"] == "id");
    CHECK(p["pciBusID"] == "id");
  }
}

TEST_CASE("checkpoint: both DeviceIDs shapes, matched by pod UID, sorted", "[kubelet]") {
  const std::string text = R"({"Data":{"PodDeviceEntries":[
    {"PodUID":"u1","ContainerName":"c","ResourceName":"r","DeviceIDs":{"1":["vf3"],"-1":["vf1"]},"AllocResp":"AA=="},
    {"PodUID":"u1","ContainerName":"d","ResourceName":"r","DeviceIDs":["vf0"]},
    {"PodUID":"u2","ContainerName":"c","ResourceName":"r","DeviceIDs":["other"]},
    {"PodUID":"u1","ContainerName":"c","ResourceName":"s","DeviceIDs":null}],
    "RegisteredDevices":{"r":["vf0","vf1","vf3","other"]}},"Checksum":123})";
  CHECK(checkpoint_devices(text, "/cp", "u1") == DeviceTable{{"r", {"vf0", "vf1", "vf3"}}, {"s", {}}});
  CHECK(checkpoint_devices(text, "/cp", "u3").empty());
  CHECK(checkpoint_devices("{}", "/cp", "u1").empty());
  CHECK(checkpoint_devices(R"({"Data":null})", "/cp", "u1").empty());
}

TEST_CASE("checkpoint: every malformed shape is an error naming the file", "[kubelet]") {
  const char* bad[] = {
      "",
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u1")",  // truncated
      "[]",
      R"({"Data":[]})",
      R"({"Data":{"PodDeviceEntries":{}}})",
      R"({"Data":{"PodDeviceEntries":[7]}})",
      R"({"Data":{"PodDeviceEntries":[{"ResourceName":"r"}]}})",
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u1","DeviceIDs":["a"]}]}})",
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u1","ResourceName":"r","DeviceIDs":[1]}]}})",
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u1","ResourceName":"r","DeviceIDs":{"0":"a"}}]}})",
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u1","ResourceName":"r","DeviceIDs":"a"}]}})",
  };
  for (const char* text : bad) {
    std::string msg;
    CHECK(error_code([&] { checkpoint_devices(text, "/var/cp", "u1"); }, &msg) == 6u);
    CHECK(msg.find("/var/cp") != std::string::npos);
  }
  CHECK(error_code([&] { checkpoint_devices("{}", "/var/cp", ""); }) == 7u);
}

TEST_CASE("PodResources: the devices of the pod named by namespace and name", "[kubelet]") {
  PodMessage mine("web", "prod", {"vf7", "vf2"}, {"mlx0"});
  PodMessage same_name_other_ns("web", "dev", {"vf1"}, {});
  PodMessage other("db", "prod", {"vf0"}, {});
  const std::string message = pack({&other.pod, &same_name_other_ns.pod, &mine.pod});
  CHECK(pod_resources_devices(message, "prod", "web") ==
        DeviceTable{{"example.com/sriov", {"vf2", "vf7"}}, {"example.com/rdma", {"mlx0"}}});
  CHECK(pod_resources_devices(message, "prod", "absent").empty());
  CHECK(pod_resources_devices("", "prod", "web").empty());  // an empty answer: no pods
}

TEST_CASE("PodResources: an answer that is not the message is a decoding error", "[kubelet]") {
  PodMessage mine("web", "prod", {"vf1"}, {});
  std::string message = pack({&mine.pod});
  for (const std::string& bad : {std::string("\x0a\xff\xff\xff\xff\x0f", 6), message.substr(0, message.size() - 3),
                                 std::string("\x0f\x01", 2)}) {
    std::string msg;
    CHECK(error_code([&] { pod_resources_devices(bad, "prod", "web"); }, &msg) == 6u);
    CHECK(msg.find("PodResources") != std::string::npos);
  }
}

TEST_CASE("device allocation: a loader that failed is not asked again", "[kubelet]") {
  int loads = 0;
  DeviceAllocator devices([&]() -> DeviceTable {
    ++loads;
    throw CniError(manifold::cni::ErrorCode::DeviceUnavailable, "kubelet timed out");
  });
  std::string first, second;
  CHECK(error_code([&] { devices.take("r", "ns/a"); }, &first) == 108u);
  CHECK(error_code([&] { devices.take("s", "ns/b"); }, &second) == 108u);
  CHECK(first == second);
  CHECK(loads == 1);
}
