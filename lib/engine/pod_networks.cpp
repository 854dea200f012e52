// Implementation of Kubernetes attachment resolution: pod check, NAD fetch (every NAD the pod names
// in one batch, one round trip) and conversion, the default-network override, defaultNetworks, the
// networks annotation and namespace isolation.
#include "engine/pod_networks.h"

#include <map>
#include <optional>

#include "cni/conf_files.h"
#include "cni/error.h"
#include "engine/nad_resolver.h"
#include "engine/pod_status.h"
#include "k8s/isolation.h"
#include "k8s/nad_config.h"
#include "k8s/selection.h"
#include "kubelet/device_info.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;
using cni::ErrorCode;

// A clusterNetwork/defaultNetworks value: a NAD in multusNamespace when it has no '/', else (or when
// there is no such NAD) a config file, directory or name in confDir.
Attachment resolve_named_network(const std::string& value, bool cluster, const cni::MetaConfig& config,
                                 NadResolver& nads) {
  Attachment a;
  a.cluster_network = cluster;
  a.runtime_config = runtime_config_for(config, cluster);
  if (auto key = named_nad(config, value)) {
    if (auto nad = nads.fetch(key->ns, key->name, true)) {
      a.delegate = nads.delegate_of(*nad, config.multus_namespace, value);
      a.name = config.multus_namespace + "/" + value;
      a.from_nad = true;
      return a;
    }
  }
  a.delegate = cni::resolve_file_network(value, config.conf_dir).config;
  a.name = cni::delegate_name(a.delegate);
  return a;
}

std::vector<std::pair<std::string, std::string>> args_pairs(const std::string& text) {
  return cni::CniArgs::parse(text).pairs();
}

// Applies a selection element to an attachment: ifname, cni-args, runtimeConfig overrides, IP=/MAC=.
void apply_selection(Attachment& a, const k8s::SelectionElement& e, bool runtime_overrides) {
  a.ifname = e.interface;
  a.extra_args = args_pairs(k8s::cni_args_for(e));
  if (e.cni_args.is_object()) {
    k8s::merge_cni_args(a.delegate, e.cni_args);
    a.selection_cni_args = e.cni_args;
  }
  a.has_default_route = e.has_default_route;
  a.default_route = e.default_route;
  if (runtime_overrides) {
    // A named local: items() of a temporary would dangle inside a range-for (before C++23).
    const Json overrides = k8s::runtime_config_for(e);
    for (const auto& [k, v] : overrides.items()) a.runtime_config[k] = v;
  }
}

// Where the delegate of `a` finds (and leaves) its device-info file.
std::string device_info_path(const cni::MetaConfig& config, const cni::Invocation& inv, const Attachment& a) {
  return kubelet::attachment_info_path(config.device_info_dir, a.name, inv.container_id, a.ifname);
}

// Gives a NAD attachment its kubelet-allocated device, when its NAD names a resource. Unless the
// device is `required` (a DEL rebuilt from the pod must release what it can), a device that cannot
// be found is logged and the delegate runs without one.
void apply_device(Attachment& a, const Json& nad, const cni::MetaConfig& config, const cni::Invocation& inv,
                  kubelet::DeviceAllocator& devices, bool required) {
  std::string resource = k8s::nad_resource_name(nad);
  if (resource.empty()) return;
  std::string id;
  try {
    id = devices.take(resource, a.name);
  } catch (const CniError& e) {
    if (required) throw;
    util::log_warning(e.msg(), "; its delegate runs without a device");
    return;
  }
  kubelet::inject_device_id(a.delegate, id);
  a.runtime_config["deviceID"] = id;
  a.resource_name = resource;
  a.device_id = id;
  a.device_info_file = device_info_path(config, inv, a);  // final once interface names are assigned
}

// The attachment of a fetched NAD for selection element `e`.
Attachment nad_attachment(const cni::MetaConfig& config, const cni::Invocation& inv, NadResolver& nads, const Json& nad,
                          const k8s::SelectionElement& e, bool cluster, kubelet::DeviceAllocator& devices,
                          bool devices_required) {
  Attachment a;
  a.cluster_network = cluster;
  a.from_nad = true;
  a.name = e.namespace_ + "/" + e.name;
  a.delegate = nads.delegate_of(nad, e.namespace_, e.name);
  a.runtime_config = runtime_config_for(config, cluster);
  apply_selection(a, e, !cluster);  // the cluster network never gets per-network overrides
  apply_device(a, nad, config, inv, devices, devices_required);
  return a;
}

// One pod's resolution, step by step in Multus's order: the cluster network, defaultNetworks and
// the remaining inline delegates, the pod's networks annotation, the auxiliary chain; then the
// interface names. Every NAD these steps read is fetched up front, in one batch. In best-effort mode
// a network that cannot be resolved keeps its place (so the others keep their interface names) and
// is dropped once names are assigned.
class PodResolution {
 public:
  PodResolution(const cni::MetaConfig& config, const cni::Invocation& inv, KubeAccess& kube, const k8s::Pod& pod,
                kubelet::DeviceAllocator& devices, Resolution mode)
      : config_(config),
        inv_(inv),
        kube_(kube),
        pod_(pod),
        devices_(devices),
        strict_(mode == Resolution::Strict),
        ref_(cni::pod_ref_from(inv.args)),
        policy_(k8s::namespace_policy_from_config(config)),
        nads_(kube, config) {
    const std::string& value = pod.annotation(k8s::kDefaultNetworkAnnotation);
    if (value.empty()) return;
    try {
      override_ = k8s::parse_default_network_annotation(value, config.multus_namespace);
    } catch (const CniError& e) {
      override_error_ = e;
    }
  }

  std::vector<Attachment> run() {
    nads_.prefetch(nads_named());
    add_cluster_network();
    add_default_networks();
    add_selected_networks();
    if (auto aux = auxiliary_chain(config_)) add(aux->name, false, [&] { return *aux; });
    return named_attachments();
  }

 private:
  bool has_override() const { return override_ || override_error_; }
  std::vector<k8s::ObjectKey> nads_named() const;
  template <class Make>
  void add(const std::string& what, bool cluster, Make&& make);
  const Json& fetch_nad(const k8s::SelectionElement& e);
  Attachment from_nad(const k8s::SelectionElement& e, bool cluster) {
    return nad_attachment(config_, inv_, nads_, fetch_nad(e), e, cluster, devices_, strict_);
  }
  void add_cluster_network();
  void add_default_networks();
  void add_selected_networks();
  std::vector<Attachment> named_attachments();

  const cni::MetaConfig& config_;
  const cni::Invocation& inv_;
  KubeAccess& kube_;
  const k8s::Pod& pod_;
  kubelet::DeviceAllocator& devices_;
  const bool strict_;
  const cni::PodRef ref_;
  const k8s::NamespacePolicy policy_;
  NadResolver nads_;
  std::optional<k8s::SelectionElement> override_;  ///< the default-network annotation, parsed
  std::optional<CniError> override_error_;         ///< why it could not be parsed
  std::vector<Attachment> out_;
  std::vector<bool> skipped_;
};

// Every NAD the steps read, so that all are fetched in one round trip before they ask for them one
// by one. Whatever cannot be parsed is left for its step to report, and nothing outside the
// namespaces isolation allows is named; in strict mode a violation names nothing at all (the ADD
// fails without reading a NAD).
std::vector<k8s::ObjectKey> PodResolution::nads_named() const {
  std::vector<k8s::ObjectKey> keys;
  bool violation = false;
  auto allowed = [&](const std::string& ns) {
    try {
      k8s::check_isolation(policy_, ref_.namespace_, ns);
      return true;
    } catch (const CniError&) {
      violation = true;
      return false;
    }
  };
  auto named = [&](const std::string& value) {
    if (auto key = named_nad(config_, value)) keys.push_back(*key);
  };
  if (override_) {
    if (override_->namespace_ == config_.multus_namespace || allowed(override_->namespace_))
      keys.push_back({override_->namespace_, override_->name});
  } else if (!has_override()) {
    named(config_.cluster_network);
  }
  if (!k8s::is_system_namespace(policy_, ref_.namespace_))
    for (const auto& name : config_.default_networks) named(name);
  for (const auto& e : pod_.networks)
    if (allowed(e.namespace_)) keys.push_back({e.namespace_, e.name});
  if (strict_ && violation) return {};
  return keys;
}

// Adds the attachment `make` builds; in best-effort mode a failure leaves a placeholder.
template <class Make>
void PodResolution::add(const std::string& what, bool cluster, Make&& make) {
  if (strict_) {
    out_.push_back(make());
    skipped_.push_back(false);
    return;
  }
  try {
    out_.push_back(make());
    skipped_.push_back(false);
  } catch (const CniError& e) {
    util::log_warning("skipping network ", what, ", which cannot be resolved: ", e.msg());
    Attachment placeholder;
    placeholder.name = what;
    placeholder.cluster_network = cluster;
    out_.push_back(std::move(placeholder));
    skipped_.push_back(true);
  }
}

// A missing NAD is also told to the pod's owner, as Multus does: a Warning Event NoNetworkFound.
const Json& PodResolution::fetch_nad(const k8s::SelectionElement& e) {
  try {
    return *nads_.fetch(e.namespace_, e.name, false);  // never null: missing throws
  } catch (const CniError& err) {
    if (err.code() == static_cast<unsigned>(ErrorCode::NetworkNotFound) && strict_)
      send_warning_event(kube_, ref_, pod_, "NoNetworkFound", err.msg());
    throw;
  }
}

// 1. The cluster network: the default-network annotation, else clusterNetwork, else the first delegate.
void PodResolution::add_cluster_network() {
  if (has_override()) {
    if (override_error_) throw *override_error_;
    const k8s::SelectionElement& e = *override_;
    // Unlike Multus, isolation also binds the default-network annotation (otherwise a pod could
    // pick any namespace's NAD as its cluster network); the multusNamespace, where operators keep
    // the cluster networks this annotation names by default, stays allowed.
    auto check = [&] {
      if (e.namespace_ != config_.multus_namespace) k8s::check_isolation(policy_, ref_.namespace_, e.namespace_);
    };
    if (strict_) check();
    add(e.namespace_ + "/" + e.name, true, [&] {
      check();
      return from_nad(e, true);
    });
  } else if (!config_.cluster_network.empty()) {
    add(config_.cluster_network, true,
        [&] { return resolve_named_network(config_.cluster_network, true, config_, nads_); });
  } else {
    Attachment a = inline_attachment(config_, 0);
    add(a.name, true, [&] { return a; });
  }
}

// 2. defaultNetworks (and the remaining inline delegates), except for system namespaces.
void PodResolution::add_default_networks() {
  if (!k8s::is_system_namespace(policy_, ref_.namespace_)) {
    for (const auto& name : config_.default_networks)
      add(name, false, [&] { return resolve_named_network(name, false, config_, nads_); });
  }
  if (config_.cluster_network.empty())
    for (size_t i = 1; i < config_.delegates.size(); ++i) {
      Attachment a = inline_attachment(config_, i);
      add(a.name, false, [&] { return a; });
    }
}

// 3. The pod's networks annotation. Namespace isolation is checked for every element before any
// NAD is read, so a violation reads nothing across namespaces.
void PodResolution::add_selected_networks() {
  if (pod_.networks_error) {
    if (strict_) throw *pod_.networks_error;
    util::log_warning("skipping the pod's networks annotation, which cannot be parsed: ", pod_.networks_error->msg());
  }
  if (strict_)
    for (const auto& e : pod_.networks) k8s::check_isolation(policy_, ref_.namespace_, e.namespace_);
  for (const auto& e : pod_.networks)
    add(e.namespace_ + "/" + e.name, false, [&] {
      k8s::check_isolation(policy_, ref_.namespace_, e.namespace_);
      Attachment a = from_nad(e, false);
      a.selection = k8s::selection_record(e);
      return a;
    });
}

// Interface names assigned in order, the unresolved placeholders dropped, and each device network's
// device-info file named after its final interface.
std::vector<Attachment> PodResolution::named_attachments() {
  assign_interface_names(out_, inv_.ifname);
  std::vector<Attachment> kept;
  for (size_t i = 0; i < out_.size(); ++i) {
    if (skipped_[i]) continue;
    Attachment& a = out_[i];
    if (!a.device_info_file.empty()) {
      a.device_info_file = device_info_path(config_, inv_, a);
      a.runtime_config["CNIDeviceInfoFile"] = a.device_info_file;
    }
    kept.push_back(std::move(a));
  }
  return kept;
}

}  // namespace

PodNotFound::PodNotFound(const std::string& ns, const std::string& name)
    : CniError(ErrorCode::Kubernetes, "pod " + ns + "/" + name + " does not exist in the Kubernetes API") {}

k8s::Pod fetch_pod(KubeAccess& kube, const cni::PodRef& ref) {
  std::optional<k8s::Pod> pod;
  try {
    pod = kube.get_pod(ref.namespace_, ref.name);
  } catch (const k8s::ApiError& e) {
    if (e.not_found()) throw PodNotFound(ref.namespace_, ref.name);
    throw;
  }
  // Static pods (from a file or URL on the node) have a mirror pod with another UID; only those are
  // exempt, as in Multus: a pod whose source is "api" is checked like any other.
  if (!ref.uid.empty() && pod->uid != ref.uid && !pod->is_static())
    throw CniError(ErrorCode::Kubernetes, "expected pod UID \"" + ref.uid + "\" but got \"" + pod->uid +
                                              "\" from the Kubernetes API for pod " + ref.namespace_ + "/" + ref.name);
  return std::move(*pod);
}

std::vector<Attachment> resolve_pod_attachments(const cni::MetaConfig& config, const cni::Invocation& inv,
                                                KubeAccess& kube, const k8s::Pod& pod,
                                                kubelet::DeviceAllocator& devices, Resolution mode) {
  return PodResolution(config, inv, kube, pod, devices, mode).run();
}

Attachment resolve_selected_network(const cni::MetaConfig& config, const cni::Invocation& inv, KubeAccess& kube,
                                    const k8s::SelectionElement& element, const std::string& ifname) {
  auto ref = cni::pod_ref_from(inv.args);
  k8s::check_isolation(k8s::namespace_policy_from_config(config), ref.namespace_, element.namespace_);
  NadResolver nads(kube, config);
  kubelet::DeviceAllocator no_devices([]() -> kubelet::DeviceTable {
    throw CniError(ErrorCode::DeviceUnavailable,
                   "a network added to a running pod cannot get a kubelet device: the kubelet allocates devices when "
                   "it admits the pod");
  });
  Attachment a = nad_attachment(config, inv, nads, *nads.fetch(element.namespace_, element.name, false), element, false,
                                no_devices, true);
  a.selection = k8s::selection_record(element);
  a.ifname = ifname;
  return a;
}

std::vector<Attachment> resolve_configured_attachments(const cni::MetaConfig& config, const cni::Invocation& inv,
                                                       KubeAccess& kube) {
  if (!kube.configured()) return resolve_static_attachments(config, inv);
  NadResolver nads(kube, config);
  std::vector<k8s::ObjectKey> keys;
  if (auto key = named_nad(config, config.cluster_network)) keys.push_back(*key);
  for (const auto& name : config.default_networks)
    if (auto key = named_nad(config, name)) keys.push_back(*key);
  nads.prefetch(keys);
  std::vector<Attachment> out;
  if (!config.cluster_network.empty()) {
    out.push_back(resolve_named_network(config.cluster_network, true, config, nads));
  } else {
    out.push_back(inline_attachment(config, 0));
  }
  for (const auto& name : config.default_networks) out.push_back(resolve_named_network(name, false, config, nads));
  if (config.cluster_network.empty())
    for (size_t i = 1; i < config.delegates.size(); ++i) out.push_back(inline_attachment(config, i));
  if (auto aux = auxiliary_chain(config)) out.push_back(std::move(*aux));
  assign_interface_names(out, inv.ifname);
  return out;
}

}  // namespace manifold::engine
