// Implementation of kubelet checkpoint parsing and device hand-out.
#include "k8s/device_checkpoint.h"

#include <algorithm>

namespace manifold::k8s {

namespace {

void collect_ids(const Json& ids, std::vector<std::string>& out) {
  if (ids.is_array()) {
    for (const auto& id : ids)
      if (id.is_string()) out.push_back(id.get<std::string>());
  } else if (ids.is_object()) {
    for (const auto& [numa, list] : ids.items()) collect_ids(list, out);
  }
}

}  // namespace

std::map<std::string, std::vector<std::string>> pod_devices(const Json& checkpoint, std::string_view pod_uid) {
  std::map<std::string, std::vector<std::string>> out;
  if (!checkpoint.is_object() || pod_uid.empty()) return out;
  auto data = checkpoint.find("Data");
  if (data == checkpoint.end() || !data->is_object()) return out;
  auto entries = data->find("PodDeviceEntries");
  if (entries == data->end() || !entries->is_array()) return out;
  for (const auto& e : *entries) {
    if (!e.is_object() || !e.contains("PodUID") || !e["PodUID"].is_string() ||
        e["PodUID"].get<std::string>() != pod_uid || !e.contains("ResourceName") || !e["ResourceName"].is_string() ||
        !e.contains("DeviceIDs"))
      continue;
    collect_ids(e["DeviceIDs"], out[e["ResourceName"].get<std::string>()]);
  }
  for (auto& [resource, ids] : out) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  return out;
}

std::string DeviceAllocator::next(const std::string& resource) {
  if (!loaded_) {
    loaded_ = true;
    if (loader_) devices_ = loader_();
  }
  auto it = devices_.find(resource);
  if (it == devices_.end()) return "";
  size_t& used = used_[resource];
  if (used >= it->second.size()) return "";
  return it->second[used++];
}

void inject_device_id(Json& delegate, const std::string& device_id) {
  auto put = [&](Json& conf) {
    conf["deviceID"] = device_id;
    conf["pciBusID"] = device_id;
  };
  if (delegate.contains("plugins") && delegate["plugins"].is_array() && !delegate.contains("type")) {
    for (auto& p : delegate["plugins"])
      if (p.is_object()) put(p);
  } else {
    put(delegate);
  }
}

}  // namespace manifold::k8s
