// Handing kubelet-allocated devices to networks. A NAD annotated `k8s.v1.cni.cncf.io/resourceName`
// asks for one device of that resource (an SR-IOV VF, say): the devices the kubelet allocated to the
// pod (through a device plugin or DRA) form a table of device IDs per resource, each list sorted
// byte-wise, and each NAD naming a resource takes the next unused ID of it, in attachment order, as
// Multus hands them out. Unlike Multus, a NAD that finds no device left is an error naming the
// resource, not a delegate started without one. The ID reaches the delegate as `deviceID` and
// `pciBusID` on its conf or every plugin of its conflist.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cni/error.h"
#include "util/json.h"

namespace manifold::kubelet {

/// Device IDs by resource name.
using DeviceTable = std::map<std::string, std::vector<std::string>>;

/// Sorts every list of `table` byte-wise and removes duplicates.
void sort_device_table(DeviceTable& table);

/// Appends every ID of `from` to `into`, resource by resource, then sorts.
void merge_device_tables(DeviceTable& into, const DeviceTable& from);

/// Hands out the devices of each resource in order, one per network that asks for that resource.
class DeviceAllocator {
 public:
  /// Uses the given allocation table (sorted here).
  explicit DeviceAllocator(DeviceTable devices = {});
  /// Calls `loader` for the table the first time a device is asked for, so the kubelet and the API
  /// are only asked when some NAD names a resource. A loader that throws CniError is not called
  /// again: every later request throws the same error (a hung kubelet costs its timeout once).
  explicit DeviceAllocator(std::function<DeviceTable()> loader) : loader_(std::move(loader)) {}
  /// The next unused device ID of `resource` for network `network`. Throws
  /// CniError(DeviceUnavailable) naming both when none is left.
  std::string take(const std::string& resource, const std::string& network);
  /// True once the table was loaded (some network asked for a device).
  bool loaded() const { return loaded_; }

 private:
  void load();

  DeviceTable devices_;
  std::function<DeviceTable()> loader_;
  bool loaded_ = false;
  std::optional<cni::CniError> failure_;
  std::map<std::string, std::size_t> used_;
};

/// Injects a device ID into a delegate: "deviceID" and "pciBusID" on a conf or on every plugin of a
/// conflist (the keys SR-IOV-style plugins read).
void inject_device_id(Json& delegate, const std::string& device_id);

}  // namespace manifold::kubelet
