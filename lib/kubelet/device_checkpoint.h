// The kubelet's device-plugin checkpoint (`kubelet_internal_checkpoint`), the fallback source of
// a pod's devices when the kubelet's PodResources socket is not there. The kubelet writes it as
// {"Data":{"PodDeviceEntries":[{"PodUID","ContainerName","ResourceName","DeviceIDs"}],...},
// "Checksum":n}, with DeviceIDs a map of NUMA node → IDs (current kubelets) or a flat list (older
// ones; both are read). The file is hostile input like any other: text that is not JSON, a top level
// or Data of the wrong type, or an entry of the wrong shape is an error naming the file and the
// entry, never a silently empty table; entries of other pods are not inspected beyond their UID.
#pragma once

#include <string>
#include <string_view>

#include "kubelet/device_allocation.h"

namespace manifold::kubelet {

/// The checkpoint's largest accepted size (the kubelet's file holds every pod's entries).
inline constexpr std::size_t kMaxCheckpointBytes = 16u << 20;

/// Device IDs the checkpoint text `text` (read from `path`, named in errors) allocates to the pod
/// with UID `pod_uid`, by resource, sorted. Throws CniError(Decoding) when the text is not a
/// checkpoint; CniError(InvalidConfig) when `pod_uid` is empty (the pod has no UID to match).
DeviceTable checkpoint_devices(std::string_view text, const std::string& path, const std::string& pod_uid);

}  // namespace manifold::kubelet
