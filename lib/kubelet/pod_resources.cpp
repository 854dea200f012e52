// Implementation of the PodResources decoding (protobuf-c, the unpacked message owned by a
// unique_ptr) and of the List call.
#include "kubelet/pod_resources.h"

#include <memory>

#include "cni/error.h"
#include "kubelet/grpc_call.h"
#include "podresources.pb-c.h"

namespace manifold::kubelet {

namespace {

struct ResponseFree {
  void operator()(V1__ListPodResourcesResponse* r) const { v1__list_pod_resources_response__free_unpacked(r, nullptr); }
};

}  // namespace

DeviceTable pod_resources_devices(std::string_view message, const std::string& ns, const std::string& name) {
  std::unique_ptr<V1__ListPodResourcesResponse, ResponseFree> response(v1__list_pod_resources_response__unpack(
      nullptr, message.size(), reinterpret_cast<const uint8_t*>(message.data())));
  if (!response)
    throw cni::CniError(cni::ErrorCode::Decoding, "the kubelet's PodResources answer (" +
                                                      std::to_string(message.size()) +
                                                      " bytes) is not a ListPodResourcesResponse");
  DeviceTable out;
  for (std::size_t p = 0; p < response->n_pod_resources; ++p) {
    const V1__PodResources* pod = response->pod_resources[p];
    if (name != pod->name || ns != pod->namespace_) continue;
    for (std::size_t c = 0; c < pod->n_containers; ++c) {
      const V1__ContainerResources* container = pod->containers[c];
      for (std::size_t d = 0; d < container->n_devices; ++d) {
        const V1__ContainerDevices* devices = container->devices[d];
        if (devices->resource_name[0] == '\0') continue;
        auto& ids = out[devices->resource_name];
        for (std::size_t i = 0; i < devices->n_device_ids; ++i) ids.emplace_back(devices->device_ids[i]);
      }
    }
  }
  sort_device_table(out);
  return out;
}

std::string list_pod_resources(const std::string& socket_path, std::chrono::milliseconds timeout) {
  GrpcCallOptions options;
  options.timeout = timeout;
  return grpc_unary_call(socket_path, kPodResourcesList, {}, options);
}

}  // namespace manifold::kubelet
