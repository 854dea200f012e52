// Devices allocated through Dynamic Resource Allocation (resource.k8s.io/v1, Kubernetes 1.34+).
// A DRA driver publishes the node's devices in ResourceSlices; the scheduler allocates some to the
// pod's ResourceClaims. A network device is found by the device attributes
// `k8s.cni.cncf.io/resourceName` and `k8s.cni.cncf.io/deviceID` of the slice entry the claim's
// allocation result names (driver, pool, device). This file walks the pod's claims — those of
// `status.resourceClaimStatuses`, claims the pod names directly in `spec.resourceClaims` (Multus
// ignores these), and `status.extendedResourceClaimStatus` — and builds the same table of device
// IDs per resource the kubelet's sources give.
#pragma once

#include <string>

#include "kubelet/device_allocation.h"
#include "util/json.h"

namespace manifold::kubelet {

/// The API reads DRA resolution makes.
class DraApi {
 public:
  virtual ~DraApi() = default;
  /// GET /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}.
  virtual Json get_resource_claim(const std::string& ns, const std::string& name) = 0;
  /// LIST /apis/resource.k8s.io/v1/resourceslices with fieldSelector spec.nodeName={node} (left
  /// out when `node` is empty) and spec.driver={driver}.
  virtual Json list_resource_slices(const std::string& node, const std::string& driver) = 0;
};

/// The device attribute naming the network resource a DRA device counts as.
inline constexpr const char* kDraResourceNameAttribute = "k8s.cni.cncf.io/resourceName";
/// The device attribute holding the device ID handed to the delegate.
inline constexpr const char* kDraDeviceIdAttribute = "k8s.cni.cncf.io/deviceID";

/// True when `pod` refers to any ResourceClaim (so DRA resolution would make requests).
bool pod_has_resource_claims(const Json& pod);

/// The network devices DRA allocated to `pod`, by resource, sorted. Results whose device is in no
/// slice or lacks the attributes are skipped with a warning (as Multus does) for ordinary claims,
/// and are errors for the extended-resource claim, whose every request must resolve. Throws
/// CniError(DeviceUnavailable) for a claim without an allocation or a request it cannot resolve,
/// CniError(Decoding) for objects of the wrong shape, and whatever `api` throws.
DeviceTable dra_pod_devices(const Json& pod, DraApi& api);

}  // namespace manifold::kubelet
