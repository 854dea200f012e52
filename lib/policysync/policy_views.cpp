// The policy part's five views: what each collection is and what its objects become in the
// PolicySync (or, for this node's pods, also the identities its Warning events need).
#include <utility>

#include "cni/error.h"
#include "policy/policy.h"
#include "policy/policy_error.h"
#include "policysync/policy_agent.h"
#include "util/log.h"

namespace manifold::policysync {

namespace {

std::string meta(const Json& object, const char* key) { return json_string_at(object, {"metadata", key}); }

// Reads an object into the sync (f() tells whether that changed anything); an object that cannot
// be read is logged and skipped.
template <typename F>
bool guarded(const char* what, const Json& object, F&& f) {
  try {
    return f();
  } catch (const policy::PolicyError& e) {
    util::log_warning("policy sync: ignoring ", what, " ", meta(object, "namespace"), "/", meta(object, "name"), ": ",
                      e.what());
  } catch (const cni::CniError& e) {
    util::log_warning("policy sync: ignoring ", what, " ", meta(object, "namespace"), "/", meta(object, "name"), ": ",
                      e.msg());
  }
  return false;
}

}  // namespace

// Long because it lists the five views, each with its sink, in one place.
void PolicyAgent::add_view(ViewIndex index, CollectionSpec spec, CollectionSink sink) {
  sink.changed = [this] { changed(); };
  TransportFactory open = [this] { return services_.open_transport(auth_, options_.tls_session_dir); };
  views_[index].watch = std::make_unique<CollectionWatch>(std::move(spec), std::move(sink), options_.views, open, auth_,
                                                          *services_.sleeper, *services_.clock);
}

void PolicyAgent::add_views() {
  CollectionSink policies;
  policies.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.begin_policies_relist();
  };
  policies.relist_end = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.end_policies_relist();
  };
  policies.put = [this](const Json& o) {
    policy::MultiNetworkPolicy p = policy::read_policy(o);  // never throws: an invalid one closes
    if (p.ns.empty() || p.name.empty()) return false;
    std::lock_guard<std::mutex> l(mu_);
    sync_.put_policy(std::move(p));
    return true;
  };
  policies.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    sync_.remove_policy(meta(o, "namespace"), meta(o, "name"));
    return true;
  };
  add_view(kPolicies,
           {"multi-networkpolicies", "/apis/k8s.cni.cncf.io/v1beta1/multi-networkpolicies", "",
            "MultiNetworkPolicyList", false},
           std::move(policies));

  CollectionSink namespaces;
  namespaces.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().begin_namespaces_relist();
  };
  namespaces.relist_end = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().end_namespaces_relist();
  };
  namespaces.put = [this](const Json& o) {
    return guarded("namespace", o, [&] {
      auto [name, labels] = policy::read_namespace(o);
      std::lock_guard<std::mutex> l(mu_);
      return sync_.peers().put_namespace(name, labels);
    });
  };
  namespaces.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    return sync_.peers().remove_namespace(meta(o, "name"));
  };
  add_view(kNamespaces, {"namespaces", "/api/v1/namespaces", "", "PartialObjectMetadataList", true},
           std::move(namespaces));

  CollectionSink pods;
  pods.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().begin_pods_relist();
  };
  pods.relist_end = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().end_pods_relist();
  };
  pods.put = [this](const Json& o) {
    return guarded("pod", o, [&] {  // most pod events change nothing a peer is: no pass for them
      policy::PodView view = policy::read_pod_view(o);
      std::lock_guard<std::mutex> l(mu_);
      return sync_.peers().put_pod(view.ns, view.name, view.labels, view.ips);
    });
  };
  pods.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    return sync_.peers().remove_pod(meta(o, "namespace"), meta(o, "name"));
  };
  add_view(kPods, {"pods", "/api/v1/pods", "", "PartialObjectMetadataList", true}, std::move(pods));

  CollectionSink local;
  local.put = [this](const Json& o) {
    return guarded("pod", o, [&] {
      policy::PodView view = policy::read_pod_view(o);
      std::lock_guard<std::mutex> l(mu_);
      warnings_.set_pod(view.ns, view.name, meta(o, "uid"), meta(o, "resourceVersion"));
      sync_.put_local_pod(std::move(view));
      return true;  // its cache entry may have changed too (a hot-plug, ADD's status)
    });
  };
  local.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    warnings_.remove_pod(meta(o, "namespace"), meta(o, "name"));
    sync_.remove_local_pod(meta(o, "namespace"), meta(o, "name"));
    return true;
  };
  add_view(kLocalPods,
           {"pods", "/api/v1/pods", "fieldSelector=spec.nodeName%3D" + options_.node_name, "PodList", false},
           std::move(local));

  CollectionSink nads;
  nads.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.clear_networks();  // no pass runs before the list is complete
  };
  nads.put = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    sync_.put_network(meta(o, "namespace") + "/" + meta(o, "name"));
    return true;
  };
  nads.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    sync_.remove_network(meta(o, "namespace") + "/" + meta(o, "name"));
    return true;
  };
  add_view(kNads,
           {"network-attachment-definitions", "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions", "",
            "PartialObjectMetadataList", true},
           std::move(nads));
}

}  // namespace manifold::policysync
