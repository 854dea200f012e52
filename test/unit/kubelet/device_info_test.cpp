// Tests of the device-info paths ('/' replaced, Multus's names) and of decoding a device plugin's
// file: known fields kept in struct order, unknown ones dropped, anything that does not decode
// (not JSON, not an object, a field of the wrong type, too large, too deep) refused with null.
#include <catch2/catch.hpp>

#include <string>

#include "kubelet/device_info.h"

using manifold::Json;
using namespace manifold::kubelet;

TEST_CASE("device-info: the device plugin's and the attachment's paths", "[kubelet]") {
  CHECK(device_plugin_info_path("/run/d", "intel.com/sriov_netdevice", "0000:af:06.0") ==
        "/run/d/dp/intel.com-sriov_netdevice-0000:af:06.0-device.json");
  CHECK(attachment_info_path("/run/d", "default/sriov-net", "abc123", "net1") ==
        "/run/d/cni/default-sriov-net-abc123_net1");
  CHECK(device_plugin_info_path("/d", "a/../b", "x/y") == "/d/dp/a-..-b-x-y-device.json");  // never leaves dp/
}

TEST_CASE("device-info: a device plugin's file decodes to the known fields", "[kubelet]") {
  Json info = parse_device_info(
      R"({"version":"1.1.0","type":"pci","extra":{"a":1},"pci":{"pci-address":"0000:af:06.0","rdma-device":"mlx5_3","x":1}})");
  REQUIRE(info.is_object());
  CHECK(info.dump() ==
        R"({"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:af:06.0","rdma-device":"mlx5_3"}})");
  CHECK(
      parse_device_info(
          R"({"type":"vdpa","version":"1.1.0","vdpa":{"parent-device":"vdpa:0000:65:00.3","driver":"vhost","path":"/dev/vhost-vdpa-1"}})")
          .contains("vdpa"));
}

TEST_CASE("device-info: decoded like Multus's DeviceInfo struct: known fields, struct order, no empty strings",
          "[kubelet]") {
  Json in = Json::parse(R"({"vdpa":{"path":"/dev/vhost-vdpa-0","driver":"vhost","bogus":"x"},
                            "extra":1,"type":"vdpa","version":"","memif":null})");
  CHECK(normalize_device_info(in).dump() == R"({"type":"vdpa","vdpa":{"driver":"vhost","path":"/dev/vhost-vdpa-0"}})");
  CHECK(normalize_device_info(Json::object()) == Json::object());
  CHECK(normalize_device_info(Json::parse(R"({"type":1})")).is_null());
  CHECK(normalize_device_info(Json::parse(R"({"pci":"0000:03:00.1"})")).is_null());
  CHECK(normalize_device_info(Json::array()).is_null());
  CHECK(normalize_device_info(nullptr).is_null());
}

TEST_CASE("device-info: content that does not decode is refused", "[kubelet]") {
  for (const std::string& bad :
       {std::string(""), std::string("{\"type\":"), std::string("[]"), std::string("\"pci\""),
        std::string(R"({"type":7})"), std::string(R"({"type":"pci","pci":"x"})"),
        std::string(R"({"type":"pci","pci":{"pci-address":1}})"), std::string(R"({"a":[[[[[[[[[[[[1]]]]]]]]]]]})")})
    CHECK(parse_device_info(bad).is_null());
  std::string huge = R"({"type":"pci","version":"1.1.0","pad":")" + std::string(kMaxDeviceInfoBytes, 'x') + "\"}";
  CHECK(parse_device_info(huge).is_null());
}
