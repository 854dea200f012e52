// Implementation of network-status writing (with conflict retry) and AddedInterface events.
#include "engine/pod_status.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "cni/result_codec.h"
#include "k8s/api_client.h"
#include "k8s/isolation.h"
#include "k8s/pod.h"
#include "kubelet/device_info.h"
#include "util/error.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

constexpr int kStatusConflictRetries = 5;

cni::Result result_of(const store::AttachmentRecord& a) {
  return cni::decode_result_text(a.result, cni::delegate_version(Json::parse(a.config)));
}

Json read_device_info(util::FileReader& files, const std::string& path) {
  if (path.empty()) return Json();
  try {
    Json j = Json::parse(files.read(path, kubelet::kMaxDeviceInfoBytes), nullptr, false);
    return j.is_discarded() ? Json() : j;
  } catch (const util::IoError&) {
    return Json();
  }
}

// One AddedInterface event per attachment, named apart.
std::vector<Json> added_events(const cni::PodRef& ref, const k8s::Pod& pod, const store::ContainerRecord& record,
                               const std::vector<cni::Result>& results) {
  if (results.size() != record.attachments.size())
    throw cni::CniError(cni::ErrorCode::Internal, "added_events: " + std::to_string(results.size()) +
                                                      " result(s) for " + std::to_string(record.attachments.size()) +
                                                      " attachment(s)");
  // Everything but the name and the message is the same in every event: built once.
  const Json ev = pod_event(ref, pod, "AddedInterface", "Normal");
  std::vector<Json> out;
  for (std::size_t n = 0; n < record.attachments.size(); ++n) {
    const auto& a = record.attachments[n];
    std::string ips;
    for (const auto& ip : results[n].ips) ips += (ips.empty() ? "" : " ") + ip.address;
    out.push_back(ev);
    out.back()["metadata"]["name"] = event_name(ref, n);
    out.back()["message"] = "Add " + a.ifname + " [" + ips + "] from " + a.name;
  }
  return out;
}

// Logs the failed events of a batch (outcomes from `first` on belong to `events`): one warning for all.
void report_event_failures(const std::vector<k8s::ApiOutcome>& outcomes, std::size_t first,
                           const std::vector<Json>& events) {
  std::size_t failed = 0;
  std::string first_error;
  for (std::size_t i = first; i < outcomes.size(); ++i) {
    if (!outcomes[i].error) continue;
    if (failed++ == 0) {
      try {
        std::rethrow_exception(outcomes[i].error);
      } catch (const cni::CniError& e) {
        first_error = e.msg();
      } catch (const std::exception& e) {
        first_error = e.what();
      }
    }
  }
  if (failed == 0) return;
  util::log_warning("could not send ", failed, " of ", events.size(), " event(s) (",
                    json_string_at(events.at(0), {"reason"}), "): ", first_error);
}

}  // namespace

std::vector<k8s::StatusInput> status_inputs(const store::ContainerRecord& record, util::FileReader& files) {
  std::vector<cni::Result> results;
  results.reserve(record.attachments.size());
  for (const auto& a : record.attachments) results.push_back(result_of(a));
  return status_inputs(record, results, files);
}

std::vector<k8s::StatusInput> status_inputs(const store::ContainerRecord& record,
                                            const std::vector<cni::Result>& results, util::FileReader& files) {
  if (results.size() != record.attachments.size())
    throw cni::CniError(cni::ErrorCode::Internal, "status_inputs: " + std::to_string(results.size()) +
                                                      " result(s) for " + std::to_string(record.attachments.size()) +
                                                      " attachment(s)");
  std::vector<k8s::StatusInput> out;
  out.reserve(record.attachments.size());
  for (std::size_t n = 0; n < record.attachments.size(); ++n) {
    const auto& a = record.attachments[n];
    const cni::Result& r = results[n];
    k8s::StatusInput in;
    in.name = a.name;
    in.is_default = a.cluster_network;
    in.ifname_requested = a.ifname;
    for (const auto& i : r.interfaces) in.interfaces.push_back({i.name, i.mac, i.mtu.value_or(0), i.sandbox});
    for (const auto& ip : r.ips) in.ips.push_back({ip.address, ip.interface, ip.gateway});
    std::vector<k8s::StatusRoute> routes;
    for (const auto& route : r.routes) routes.push_back({route.dst, route.gw});
    in.gateways = k8s::installed_default_gateways(routes, in.ips);
    in.dns = {r.dns.nameservers, r.dns.domain, r.dns.search, r.dns.options};
    in.device_info = kubelet::normalize_device_info(read_device_info(files, a.device_info_file));
    in.extra_fields = a.status_fields;
    out.push_back(std::move(in));
  }
  return out;
}

void write_network_status(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod, const std::string& value,
                          const std::vector<Json>& events) {
  // The PUT sends back the object as read (every field the API server returned), only the annotation
  // changed; its resourceVersion makes a concurrent update a conflict, after which the pod is read again.
  Json object = pod.object;
  for (int attempt = 0;; ++attempt) {
    if (!object.contains("metadata") || !object["metadata"].is_object())
      throw cni::CniError(cni::ErrorCode::Kubernetes, "pod " + ref.namespace_ + "/" + ref.name + " has no metadata");
    Json& meta = object["metadata"];
    if (!meta.contains("annotations") || !meta["annotations"].is_object()) meta["annotations"] = Json::object();
    meta["annotations"][k8s::kNetworkStatusAnnotation] = value;
    try {
      if (attempt == 0 && !events.empty()) {
        // The events ride behind the first PUT, in its round trip.
        auto outcomes = kube.update_pod_status_with_events(ref.namespace_, ref.name, object, events);
        report_event_failures(outcomes, 1, events);
        std::move(outcomes.front()).take();
      } else {
        kube.update_pod_status(ref.namespace_, ref.name, object);
      }
      return;
    } catch (const k8s::ApiError& e) {
      if (!e.conflict() || attempt + 1 >= kStatusConflictRetries)
        throw cni::CniError(
            cni::ErrorCode::Kubernetes,
            "error setting the network status of pod " + ref.namespace_ + "/" + ref.name + ": " + e.msg() +
                (e.conflict() ? " (" + std::to_string(kStatusConflictRetries) + " conflicting updates in a row)"
                              : std::string()));
      util::log_verbose("network-status update of ", ref.namespace_, "/", ref.name, " conflicted; re-reading the pod");
      k8s::Pod fresh = kube.get_pod(ref.namespace_, ref.name);
      if (fresh.uid != pod.uid)
        throw cni::CniError(cni::ErrorCode::Kubernetes, "error setting the network status of pod " + ref.namespace_ +
                                                            "/" + ref.name + ": the pod was replaced during the ADD");
      object = std::move(fresh.object);
    }
  }
}

void send_added_events(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod,
                       const store::ContainerRecord& record) {
  std::vector<cni::Result> results;
  results.reserve(record.attachments.size());
  for (const auto& a : record.attachments) {
    try {
      results.push_back(result_of(a));
    } catch (const cni::CniError&) {
      results.emplace_back();  // an undecodable result lists no addresses in its event
    }
  }
  send_added_events(kube, ref, pod, record, results);
}

Json pod_event(const cni::PodRef& ref, const k8s::Pod& pod, const std::string& reason, const std::string& type) {
  std::string stamp = util::rfc3339_now();
  stamp = stamp.substr(0, 19) + "Z";  // Kubernetes Time has second precision
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", ""}, {"namespace", ref.namespace_}}},
          {"involvedObject",
           {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"namespace", ref.namespace_},
            {"name", ref.name},
            {"uid", pod.uid},
            {"resourceVersion", pod.resource_version}}},
          {"reason", reason},
          {"message", ""},
          {"type", type},
          {"source", {{"component", "manifold"}, {"host", host}}},
          {"firstTimestamp", stamp},
          {"lastTimestamp", stamp},
          {"count", 1},
          {"reportingComponent", "manifold"},
          {"reportingInstance", host}};
}

std::string event_name(const cni::PodRef& ref, std::size_t n) {
  auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanos.count()) + n);
  return ref.name + suffix;
}

bool send_event(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod, const std::string& reason,
                const std::string& type, const std::string& message, std::size_t n) {
  Json ev = pod_event(ref, pod, reason, type);
  ev["metadata"]["name"] = event_name(ref, n);
  ev["message"] = message;
  try {
    kube.create_event(ref.namespace_, ev);
    return true;
  } catch (const cni::CniError& e) {
    util::log_warning("could not send the ", reason, " event (", e.msg(), ")");
    return false;
  }
}

void send_warning_event(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod, const std::string& reason,
                        const std::string& message) {
  send_event(kube, ref, pod, reason, "Warning", message, 0);
}

void send_added_events(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod,
                       const store::ContainerRecord& record, const std::vector<cni::Result>& results) {
  std::vector<Json> events = added_events(ref, pod, record, results);
  if (events.empty()) return;
  try {
    report_event_failures(kube.create_events(ref.namespace_, events), 0, events);
  } catch (const cni::CniError& e) {
    util::log_warning("could not send the AddedInterface events (", e.msg(), ")");
  }
}

void publish_status(KubeAccess& kube, util::FileReader& files, const cni::MetaConfig& config,
                    const cni::Invocation& inv, const k8s::Pod& pod, const store::ContainerRecord& record,
                    const std::vector<cni::Result>& results) {
  auto ref = cni::pod_ref_from(inv.args);
  auto policy = k8s::namespace_policy_from_config(config);
  if (k8s::is_system_namespace(policy, ref.namespace_)) {
    send_added_events(kube, ref, pod, record, results);
    return;
  }
  write_network_status(kube, ref, pod, k8s::render_network_status(status_inputs(record, results, files)),
                       added_events(ref, pod, record, results));
}

}  // namespace manifold::engine
