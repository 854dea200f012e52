// The kubelet's device-plugin checkpoint (kubelet_internal_checkpoint). NADs with the
// `k8s.v1.cni.cncf.io/resourceName` annotation get the device the kubelet allocated to the pod for
// that resource (an SR-IOV VF, say) as `deviceID`. This parses the checkpoint into the device IDs
// per resource for one pod, sorted, as Multus hands them out.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/json.h"

namespace manifold::k8s {

/// Device IDs allocated to `pod_uid`, by resource name, each list sorted and deduplicated. Accepts
/// both checkpoint shapes (DeviceIDs as a list, or as a map of NUMA node → list). Entries of the
/// wrong type are skipped; a checkpoint that is not an object yields an empty map.
std::map<std::string, std::vector<std::string>> pod_devices(const Json& checkpoint, std::string_view pod_uid);

/// Hands out the devices of each resource in order, one per NAD that asks for that resource.
class DeviceAllocator {
 public:
  /// The allocation table, by resource.
  using Table = std::map<std::string, std::vector<std::string>>;
  /// Uses the given allocation table.
  explicit DeviceAllocator(Table devices = {}) : devices_(std::move(devices)), loaded_(true) {}
  /// Calls `loader` for the table the first time a device is asked for (the checkpoint is only read
  /// when some NAD names a resource).
  explicit DeviceAllocator(std::function<Table()> loader) : loader_(std::move(loader)) {}
  /// The next unused device ID of `resource`, or "" when none is left.
  std::string next(const std::string& resource);

 private:
  Table devices_;
  std::function<Table()> loader_;
  bool loaded_ = false;
  std::map<std::string, size_t> used_;
};

/// Injects a device ID into a delegate: "deviceID" and "pciBusID" on a conf or on every plugin of a
/// conflist (the keys SR-IOV-style plugins read).
void inject_device_id(Json& delegate, const std::string& device_id);

}  // namespace manifold::k8s
