// Implementation of Kubernetes attachment resolution: pod check, NAD fetch (every NAD the pod names
// in one batch, one round trip) and conversion, the default-network override, defaultNetworks, the
// networks annotation and namespace isolation.
#include "engine/pod_networks.h"

#include <map>

#include "cni/conf_files.h"
#include "cni/error.h"
#include "engine/nad_resolver.h"
#include "engine/pod_status.h"
#include "k8s/isolation.h"
#include "k8s/nad_config.h"
#include "k8s/pod_object.h"
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

// Every NAD an ADD of `pod` reads, so that all are fetched in one round trip before resolution asks
// for them one by one. Whatever cannot be parsed is left for the resolution to report, and nothing
// outside the namespaces isolation allows is named; in strict mode a violation names nothing at all
// (the ADD fails without reading a NAD).
std::vector<k8s::ObjectKey> nads_of_pod(const cni::MetaConfig& config, const cni::PodRef& ref, const Json& pod,
                                        const k8s::NamespacePolicy& policy, bool strict) {
  std::vector<k8s::ObjectKey> keys;
  bool violation = false;
  auto allowed = [&](const std::string& ns) {
    try {
      k8s::check_isolation(policy, ref.namespace_, ns);
      return true;
    } catch (const CniError&) {
      violation = true;
      return false;
    }
  };
  auto named = [&](const std::string& value) {
    if (auto key = named_nad(config, value)) keys.push_back(*key);
  };
  try {
    std::string override_value = pod_annotation(pod, std::string(k8s::kDefaultNetworkAnnotation));
    if (!override_value.empty()) {
      auto e = k8s::parse_default_network_annotation(override_value, config.multus_namespace);
      if (e.namespace_ == config.multus_namespace || allowed(e.namespace_)) keys.push_back({e.namespace_, e.name});
    } else {
      named(config.cluster_network);
    }
  } catch (const CniError&) {}
  if (!k8s::is_system_namespace(policy, ref.namespace_))
    for (const auto& name : config.default_networks) named(name);
  try {
    for (const auto& e :
         k8s::parse_networks_annotation(pod_annotation(pod, std::string(k8s::kNetworksAnnotation)), ref.namespace_))
      if (allowed(e.namespace_)) keys.push_back({e.namespace_, e.name});
  } catch (const CniError&) {}
  if (strict && violation) return {};
  return keys;
}

}  // namespace

std::string pod_annotation(const Json& pod, const std::string& key) { return k8s::pod_annotation_value(pod, key); }

Json fetch_pod(KubeAccess& kube, const cni::PodRef& ref) {
  Json pod;
  try {
    pod = kube.get_pod(ref.namespace_, ref.name);
  } catch (const k8s::ApiError& e) {
    if (e.not_found())
      throw CniError(ErrorCode::Kubernetes, "pod " + ref.namespace_ + "/" + ref.name +
                                                " does not exist in the Kubernetes API; not attaching it");
    throw;
  }
  k8s::validate_pod_object(pod, ref.namespace_, ref.name);
  std::string uid = k8s::pod_metadata_string(pod, "uid");
  // Static pods (from a file or URL on the node) have a mirror pod with another UID; only those are
  // exempt, as in Multus: a pod whose source is "api" is checked like any other.
  const std::string source = pod_annotation(pod, "kubernetes.io/config.source");
  bool static_pod = !source.empty() && source != "api";
  if (!ref.uid.empty() && uid != ref.uid && !static_pod)
    throw CniError(ErrorCode::Kubernetes, "expected pod UID \"" + ref.uid + "\" but got \"" + uid +
                                              "\" from the Kubernetes API for pod " + ref.namespace_ + "/" + ref.name);
  return pod;
}

std::vector<Attachment> resolve_pod_attachments(const cni::MetaConfig& config, const cni::Invocation& inv,
                                                KubeAccess& kube, const Json& pod, kubelet::DeviceAllocator& devices,
                                                Resolution mode) {
  auto ref = cni::pod_ref_from(inv.args);
  auto policy = k8s::namespace_policy_from_config(config);
  NadResolver nads(kube, config);
  nads.prefetch(nads_of_pod(config, ref, pod, policy, mode == Resolution::Strict));
  std::vector<Attachment> out;
  std::vector<bool> skipped;

  // Adds the attachment `make` builds. In best-effort mode a network that cannot be resolved keeps
  // its place (so the others keep their interface names) and is dropped once names are assigned.
  auto add = [&](const std::string& what, bool cluster, auto&& make) {
    if (mode == Resolution::Strict) {
      out.push_back(make());
      skipped.push_back(false);
      return;
    }
    try {
      out.push_back(make());
      skipped.push_back(false);
    } catch (const CniError& e) {
      util::log_warning("skipping network ", what, ", which cannot be resolved: ", e.msg());
      Attachment placeholder;
      placeholder.name = what;
      placeholder.cluster_network = cluster;
      out.push_back(std::move(placeholder));
      skipped.push_back(true);
    }
  };
  // A missing NAD is also told to the pod's owner, as Multus does: a Warning Event NoNetworkFound.
  auto fetch_nad = [&](const k8s::SelectionElement& e) -> const Json& {
    try {
      return *nads.fetch(e.namespace_, e.name, false);  // never null: missing throws
    } catch (const CniError& err) {
      if (err.code() == static_cast<unsigned>(ErrorCode::NetworkNotFound) && mode == Resolution::Strict)
        send_warning_event(kube, ref, pod, "NoNetworkFound", err.msg());
      throw;
    }
  };
  auto from_nad = [&](const k8s::SelectionElement& e, bool cluster) {
    return nad_attachment(config, inv, nads, fetch_nad(e), e, cluster, devices, mode == Resolution::Strict);
  };

  // 1. The cluster network.
  std::string override_value = pod_annotation(pod, std::string(k8s::kDefaultNetworkAnnotation));
  if (!override_value.empty()) {
    auto e = k8s::parse_default_network_annotation(override_value, config.multus_namespace);
    // Unlike Multus, isolation also binds the default-network annotation (otherwise a pod could
    // pick any namespace's NAD as its cluster network); the multusNamespace, where operators keep
    // the cluster networks this annotation names by default, stays allowed.
    auto check = [&] {
      if (e.namespace_ != config.multus_namespace) k8s::check_isolation(policy, ref.namespace_, e.namespace_);
    };
    if (mode == Resolution::Strict) check();
    add(e.namespace_ + "/" + e.name, true, [&] {
      check();
      return from_nad(e, true);
    });
  } else if (!config.cluster_network.empty()) {
    add(config.cluster_network, true,
        [&] { return resolve_named_network(config.cluster_network, true, config, nads); });
  } else {
    Attachment a = inline_attachment(config, 0);
    add(a.name, true, [&] { return a; });
  }

  // 2. defaultNetworks (and the remaining inline delegates), except for system namespaces.
  if (!k8s::is_system_namespace(policy, ref.namespace_)) {
    for (const auto& name : config.default_networks)
      add(name, false, [&] { return resolve_named_network(name, false, config, nads); });
  }
  if (config.cluster_network.empty())
    for (size_t i = 1; i < config.delegates.size(); ++i) {
      Attachment a = inline_attachment(config, i);
      add(a.name, false, [&] { return a; });
    }

  // 3. The pod's networks annotation. Namespace isolation is checked for every element before any
  // NAD is read, so a violation reads nothing across namespaces.
  std::vector<k8s::SelectionElement> elements;
  try {
    elements =
        k8s::parse_networks_annotation(pod_annotation(pod, std::string(k8s::kNetworksAnnotation)), ref.namespace_);
  } catch (const CniError& e) {
    if (mode == Resolution::Strict) throw;
    util::log_warning("skipping the pod's networks annotation, which cannot be parsed: ", e.msg());
  }
  if (mode == Resolution::Strict)
    for (const auto& e : elements) k8s::check_isolation(policy, ref.namespace_, e.namespace_);
  for (const auto& e : elements)
    add(e.namespace_ + "/" + e.name, false, [&] {
      k8s::check_isolation(policy, ref.namespace_, e.namespace_);
      Attachment a = from_nad(e, false);
      a.selection = k8s::selection_record(e);
      return a;
    });

  if (auto aux = auxiliary_chain(config)) add(aux->name, false, [&] { return *aux; });
  assign_interface_names(out, inv.ifname);
  std::vector<Attachment> kept;
  for (size_t i = 0; i < out.size(); ++i) {
    if (skipped[i]) continue;
    Attachment& a = out[i];
    if (!a.device_info_file.empty()) {
      a.device_info_file = device_info_path(config, inv, a);
      a.runtime_config["CNIDeviceInfoFile"] = a.device_info_file;
    }
    kept.push_back(std::move(a));
  }
  return kept;
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
