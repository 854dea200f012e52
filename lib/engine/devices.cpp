// Implementation of the engine's device path: the kubelet source chosen by what is on the node,
// DRA through the invocation's API access, and the device-info copy and removal.
#include "engine/devices.h"

#include "cni/error.h"
#include "kubelet/device_checkpoint.h"
#include "kubelet/device_info.h"
#include "kubelet/dra_devices.h"
#include "kubelet/grpc_call.h"
#include "kubelet/pod_resources.h"
#include "util/error.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;
using cni::ErrorCode;

/// DRA's reads through the invocation's API access (its bounds and request count).
class KubeDra final : public kubelet::DraApi {
 public:
  explicit KubeDra(KubeAccess& kube) : kube_(kube) {}
  Json get_resource_claim(const std::string& ns, const std::string& name) override {
    return kube_.get_resource_claim(ns, name);
  }
  Json list_resource_slices(const std::string& node, const std::string& driver) override {
    return kube_.list_resource_slices(node, driver);
  }

 private:
  KubeAccess& kube_;
};

// Which devices the kubelet allocated to the pod, for the log (what a device network gets and why).
void log_devices(const kubelet::DeviceTable& table, const char* source, const k8s::Pod& pod) {
  std::string text;
  for (const auto& [resource, ids] : table) {
    text += (text.empty() ? "" : ", ") + resource + " [";
    for (size_t i = 0; i < ids.size(); ++i) text += (i ? " " : "") + ids[i];
    text += "]";
  }
  util::log_verbose("devices of pod ", pod.namespace_, "/", pod.name, " from ", source, ": ",
                    text.empty() ? "none" : text);
}

kubelet::DeviceTable checkpoint_table(const Services& services, const cni::MetaConfig& config, const k8s::Pod& pod) {
  const std::string& path = config.kubelet_checkpoint_file;
  if (!services.file_exists(path)) {
    util::log_verbose("no kubelet device checkpoint at ", path, ": no device-plugin devices");
    return {};
  }
  std::string text;
  try {
    text = services.files->read(path, kubelet::kMaxCheckpointBytes);
  } catch (const util::FileTooLarge& e) {
    throw CniError(ErrorCode::Decoding, "the kubelet device checkpoint is not one: " + e.msg());
  } catch (const util::IoError& e) {
    throw CniError(ErrorCode::DeviceUnavailable, "cannot read the kubelet device checkpoint: " + e.msg());
  }
  kubelet::DeviceTable table = kubelet::checkpoint_devices(text, path, pod.uid);
  log_devices(table, "the kubelet's device checkpoint", pod);
  return table;
}

}  // namespace

kubelet::DeviceTable kubelet_pod_devices(const Services& services, const cni::MetaConfig& config, const k8s::Pod& pod) {
  const std::string& socket = config.pod_resources_socket;
  if (!socket.empty() && services.file_exists(socket)) {
    try {
      const std::string answer = services.list_pod_resources(socket, std::chrono::seconds(config.kubelet_timeout_s));
      kubelet::DeviceTable table = kubelet::pod_resources_devices(answer, pod.namespace_, pod.name);
      log_devices(table, "the kubelet's PodResources", pod);
      return table;
    } catch (const kubelet::GrpcError& e) {
      if (e.failure() != kubelet::GrpcFailure::Unreachable)
        throw CniError(ErrorCode::DeviceUnavailable,
                       std::string("cannot learn the pod's devices from the kubelet: ") + e.what());
      util::log_warning("the kubelet does not serve PodResources (", e.what(),
                        "); reading its device checkpoint instead");
    }
  }
  return checkpoint_table(services, config, pod);
}

kubelet::DeviceAllocator pod_device_allocator(const Services& services, const cni::MetaConfig& config, KubeAccess& kube,
                                              const k8s::Pod& pod) {
  return kubelet::DeviceAllocator([&services, &config, &kube, &pod] {
    kubelet::DeviceTable table = kubelet_pod_devices(services, config, pod);
    if (kubelet::pod_has_resource_claims(pod.object)) {
      KubeDra dra(kube);
      kubelet::merge_device_tables(table, kubelet::dra_pod_devices(pod.object, dra));
    }
    return table;
  });
}

void copy_device_info(const Services& services, const cni::MetaConfig& config, const Attachment& a) noexcept {
  if (a.device_info_file.empty() || a.device_id.empty() || !services.file_writer) return;
  const std::string source = kubelet::device_plugin_info_path(config.device_info_dir, a.resource_name, a.device_id);
  try {
    if (!services.file_exists(source)) {
      util::log_verbose("no device-info file ", source, " for network \"", a.name, "\"");
      return;
    }
    const Json info = kubelet::parse_device_info(services.files->read(source, kubelet::kMaxDeviceInfoBytes));
    if (info.is_null()) {
      util::log_warning("device-info file ", source, " of network \"", a.name,
                        "\" is not a device-info object; not passed on");
      return;
    }
    services.file_writer->write(a.device_info_file, info.dump(), 0444);
  } catch (const std::exception& e) {
    util::log_warning("cannot pass the device-info of network \"", a.name, "\" on: ", e.what());
  }
}

void remove_device_info(util::FileWriter* writer, const std::string& path) noexcept {
  if (path.empty() || !writer) return;
  try {
    writer->remove(path);
  } catch (const std::exception& e) {
    util::log_warning("cannot remove the device-info file: ", e.what());
  }
}

}  // namespace manifold::engine
