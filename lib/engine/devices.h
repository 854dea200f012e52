// The device path of the engine: which kubelet-allocated device each device network gets, and the
// device-info file around its delegate. The pod's devices come from the kubelet's PodResources API
// when its socket is there (a kubelet that is not serving it — the socket left behind by a stopped
// kubelet — falls back to the checkpoint, with a warning), else from the kubelet's device
// checkpoint, merged with the devices DRA allocated to the pod's ResourceClaims. Nothing is asked
// until a network names a resource. Before a device network's delegate runs, the device plugin's
// device-info file is copied to the attachment's own file; when the attachment goes, that file is
// removed.
#pragma once

#include <string>

#include "cni/netconf.h"
#include "engine/attachment.h"
#include "engine/kube_access.h"
#include "engine/services.h"
#include "k8s/pod.h"
#include "kubelet/device_allocation.h"

namespace manifold::engine {

/// The devices the kubelet allocated to `pod` (PodResources, else the checkpoint). Throws
/// CniError(DeviceUnavailable) when the kubelet answers badly or not in time, CniError(Decoding)
/// when the checkpoint is not one.
kubelet::DeviceTable kubelet_pod_devices(const Services& services, const cni::MetaConfig& config, const k8s::Pod& pod);

/// The allocator of `pod`'s devices, loading kubelet_pod_devices merged with DRA's (through `kube`)
/// on the first request. `services`, `config`, `kube` and `pod` must outlive it.
kubelet::DeviceAllocator pod_device_allocator(const Services& services, const cni::MetaConfig& config, KubeAccess& kube,
                                              const k8s::Pod& pod);

/// Copies the device plugin's device-info file of `a`'s device to `a.device_info_file` (mode 0444),
/// as the content decodes; a missing, oversized or malformed file is logged and skipped. Never
/// throws: the device-info file is information, not a condition of the attachment.
void copy_device_info(const Services& services, const cni::MetaConfig& config, const Attachment& a) noexcept;

/// Removes the attachment's device-info file `path` ("" = none) through `writer` (null: nothing to
/// remove with); a failure is logged.
void remove_device_info(util::FileWriter* writer, const std::string& path) noexcept;

}  // namespace manifold::engine
