// Implementation of attachment planning: pod lookup, the lazy kubelet device table, resolution,
// scoping plans across attachments, the preflight, and the records of a rebuilt DEL.
#include "engine/plan.h"

#include <algorithm>

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "engine/devices.h"
#include "util/error.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;

// Keeps of each "no default route" plan only the families no other attachment chose a gateway
// for, so that its cached plan (and CHECK) says exactly what ADD did.
void narrow_no_default_routes(std::vector<scoping::ScopingPlan>& plans) {
  const std::vector<scoping::DefaultRouteRequest> requests = scoping::default_route_requests(plans);
  for (scoping::ScopingPlan& plan : plans) {
    std::erase_if(plan.no_default_route, [&](int family) {
      return std::any_of(requests.begin(), requests.end(),
                         [family](const scoping::DefaultRouteRequest& r) { return r.family == family && !r.none(); });
    });
  }
}

}  // namespace

std::optional<k8s::Pod> lookup_pod(KubeAccess& kube, const cni::Invocation& inv) {
  auto ref = cni::pod_ref_from(inv.args);
  if (!kube.configured() || !ref.known()) return std::nullopt;
  return fetch_pod(kube, ref);
}

std::vector<Attachment> resolve_attachments(const Services& services, const Session& session, KubeAccess& kube,
                                            const cni::Invocation& inv, const std::optional<k8s::Pod>& pod,
                                            Resolution mode) {
  if (!pod) return resolve_static_attachments(session.config, inv);
  auto devices = pod_device_allocator(services, session.config, kube, *pod);
  return resolve_pod_attachments(session.config, inv, kube, *pod, devices, mode);
}

std::vector<scoping::ScopingPlan> plan_attachments_scoping(const Json& top_scoping,
                                                           std::vector<Attachment>& attachments) {
  // Strip every delegate before planning any, so that an error in one attachment's scoping still
  // leaves every delegate config without the keys; the first error is thrown afterwards.
  std::vector<Json> keys;
  std::optional<CniError> first;
  for (Attachment& a : attachments) {
    try {
      keys.push_back(scoping::strip_scoping_keys(a.delegate));
    } catch (const CniError& e) {
      if (!first) first = e;
      keys.push_back(Json::object());
    }
  }
  if (first) throw *first;
  std::vector<scoping::ScopingPlan> plans;
  for (std::size_t i = 0; i < attachments.size(); ++i) {
    const Attachment& a = attachments[i];
    plans.push_back(scoping::plan_scoping(top_scoping, keys[i], a.selection_cni_args, a.ifname, a.default_route,
                                          a.has_default_route));
  }
  narrow_no_default_routes(plans);
  return plans;
}

Plan plan_add(const Services& services, const Session& session, KubeAccess& kube, const cni::Invocation& inv,
              const std::optional<k8s::Pod>& pod) {
  Plan plan;
  plan.attachments = resolve_attachments(services, session, kube, inv, pod);
  plan.scoping = plan_attachments_scoping(session.config.scoping, plan.attachments);  // a bad key is 7
  preflight_plugins(session, plan.attachments);
  plan.policy = plan_policies(services, session, kube, inv, pod, plan.attachments);
  return plan;
}

std::vector<store::AttachmentRecord> rebuilt_attachments(const cni::MetaConfig& config,
                                                         std::vector<Attachment> attachments) {
  std::vector<scoping::ScopingPlan> plans;
  try {
    plans = plan_attachments_scoping(config.scoping, attachments);
  } catch (const CniError& e) {
    util::log_error("cannot plan the network scoping for DEL: ", e.msg());
  }
  std::vector<store::AttachmentRecord> records;
  for (size_t i = 0; i < attachments.size(); ++i) {
    const auto& a = attachments[i];
    store::AttachmentRecord rec;
    rec.name = a.name;
    rec.ifname = a.ifname;
    rec.cluster_network = a.cluster_network;
    rec.config = cni::prepare_delegate(a.delegate, a.runtime_config, config.cni_version).dump();
    if (i < plans.size()) rec.scoping = scoping::initial_scoping_state(plans[i]);
    rec.policy = rebuilt_policy_state(config, a);
    records.push_back(std::move(rec));
  }
  return records;
}

store::AttachmentRecord planned_record(const cni::MetaConfig& config, const cni::Invocation& inv, const Attachment& a,
                                       const scoping::ScopingPlan& plan, std::string& version) {
  store::AttachmentRecord rec;
  rec.name = a.name;
  rec.ifname = a.ifname;
  rec.cluster_network = a.cluster_network;
  Json prepared = cni::prepare_delegate(a.delegate, a.runtime_config, config.cni_version);
  // The version its result is decoded in, taken before the dump instead of re-parsing rec.config.
  version = cni::delegate_version(prepared);
  rec.config = prepared.dump();
  rec.cni_args = attachment_cni_args(inv.args, a);
  rec.device_info_file = a.device_info_file;
  rec.scoping = scoping::initial_scoping_state(plan);
  if (!a.selection.is_null()) rec.extra["selection"] = a.selection;
  return rec;
}

}  // namespace manifold::engine
