// The kubelet's PodResources API (v1), the first source of a pod's devices: a `List` over the
// kubelet's unix socket answers every pod on the node with the devices its containers were
// allocated. This file decodes that answer (protobuf, with protobuf-c code generated from
// lib/kubelet/podresources.proto) into the device table of one pod, matched by name and namespace as
// the kubelet reports it, and asks the kubelet through grpc_call.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "kubelet/device_allocation.h"

namespace manifold::kubelet {

/// Where the kubelet serves PodResources (the kubelet ignores its --root-dir for it).
inline constexpr const char* kPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";
/// The gRPC method of List.
inline constexpr const char* kPodResourcesList = "/v1.PodResourcesLister/List";

/// The devices of pod `ns`/`name` in the serialised ListPodResourcesResponse `message`: the
/// `resource_name`/`device_ids` of every container's devices, by resource, sorted. Throws
/// CniError(Decoding) when `message` does not decode as that message.
DeviceTable pod_resources_devices(std::string_view message, const std::string& ns, const std::string& name);

/// The serialised answer of the kubelet's List on `socket_path` within `timeout`. Throws GrpcError.
std::string list_pod_resources(const std::string& socket_path, std::chrono::milliseconds timeout);

}  // namespace manifold::kubelet
