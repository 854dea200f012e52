// Implementation of the device-info paths and of the Go-compatible decoding.
#include "kubelet/device_info.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "util/ascii.h"
#include "util/json_parse.h"

namespace manifold::kubelet {

namespace {

/// Decodes an object of string fields in `fields` order, as Go decodes into a struct of
/// `omitempty` strings. Returns false on a wrong type.
bool decode_string_struct(const Json& in, const std::vector<std::string_view>& fields, Json& out) {
  if (!in.is_object()) return false;
  std::vector<std::string> values(fields.size());
  for (const auto& [key, value] : in.items()) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (!util::iequals_ascii(key, fields[f])) continue;
      if (value.is_null()) break;
      if (!value.is_string()) return false;
      values[f] = value.get<std::string>();
      break;
    }
  }
  out = Json::object();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (!values[f].empty()) out[std::string(fields[f])] = values[f];
  }
  return true;
}

std::string dashed(std::string name) {
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

}  // namespace

std::string device_plugin_info_path(const std::string& dir, const std::string& resource, const std::string& device_id) {
  return dir + "/dp/" + dashed(resource + "-" + device_id + "-device.json");
}

std::string attachment_info_path(const std::string& dir, const std::string& network, const std::string& container_id,
                                 const std::string& ifname) {
  return dir + "/cni/" + dashed(network + "-" + container_id + "_" + ifname);
}

Json normalize_device_info(const Json& in) {
  if (in.is_null() || !in.is_object()) return nullptr;
  static const std::vector<std::string_view> kTop = {"type", "version"};
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> kNested = {
      {"pci", {"pci-address", "vhost-net", "rdma-device", "pf-pci-address", "representor-device"}},
      {"vdpa", {"parent-device", "driver", "path", "pci-address", "pf-pci-address", "representor-device"}},
      {"vhost-user", {"mode", "path"}},
      {"memif", {"role", "path", "mode"}},
  };
  Json top_in = Json::object();
  std::vector<Json> nested(kNested.size());
  for (const auto& [key, value] : in.items()) {
    for (std::string_view f : kTop) {
      if (util::iequals_ascii(key, f)) top_in[std::string(f)] = value;
    }
    for (std::size_t n = 0; n < kNested.size(); ++n) {
      if (!util::iequals_ascii(key, kNested[n].first)) continue;
      if (value.is_null()) {
        nested[n] = nullptr;
      } else if (!decode_string_struct(value, kNested[n].second, nested[n])) {
        return nullptr;
      }
    }
  }
  Json out;
  if (!decode_string_struct(top_in, kTop, out)) return nullptr;
  for (std::size_t n = 0; n < kNested.size(); ++n) {
    if (!nested[n].is_null()) out[std::string(kNested[n].first)] = nested[n];
  }
  return out;
}

Json parse_device_info(std::string_view text) {
  if (text.size() > kMaxDeviceInfoBytes) return nullptr;
  Json j = util::parse_json_bounded(std::string(text), 8);
  if (j.is_discarded()) return nullptr;
  return normalize_device_info(j);
}

}  // namespace manifold::kubelet
