// Implementation of the device table helpers, the in-order hand-out and the delegate injection.
#include "kubelet/device_allocation.h"

#include <algorithm>

#include "cni/error.h"
#include "util/quote.h"

namespace manifold::kubelet {

void sort_device_table(DeviceTable& table) {
  for (auto& [resource, ids] : table) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
}

void merge_device_tables(DeviceTable& into, const DeviceTable& from) {
  for (const auto& [resource, ids] : from) {
    auto& list = into[resource];
    list.insert(list.end(), ids.begin(), ids.end());
  }
  sort_device_table(into);
}

DeviceAllocator::DeviceAllocator(DeviceTable devices) : devices_(std::move(devices)), loaded_(true) {
  sort_device_table(devices_);
}

void DeviceAllocator::load() {
  if (failure_) throw *failure_;
  if (loaded_) return;
  try {
    if (loader_) devices_ = loader_();
  } catch (const cni::CniError& e) {
    failure_ = e;
    throw;
  }
  sort_device_table(devices_);
  loaded_ = true;
}

std::string DeviceAllocator::take(const std::string& resource, const std::string& network) {
  load();
  auto it = devices_.find(resource);
  const std::size_t have = it == devices_.end() ? 0 : it->second.size();
  std::size_t& used = used_[resource];
  if (used >= have) {
    std::string why =
        have == 0 ? "the kubelet allocated no device of that resource to the pod"
                  : "the pod has " + std::to_string(have) + " device(s) of it and earlier networks took them all";
    throw cni::CniError(cni::ErrorCode::DeviceUnavailable, "network \"" + network + "\" needs a device of resource " +
                                                               util::quote_bytes(resource, 128) + ", but " + why);
  }
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

}  // namespace manifold::kubelet
