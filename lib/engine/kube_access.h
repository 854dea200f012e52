// Kubernetes access for one CNI invocation. It finds credentials (kubeconfig, else in-cluster,
// else none) without touching the network or OpenSSL, opens one HTTPS connection on the first
// request and reuses it for every call (batches of calls are pipelined on it), bounds each request, each call (with its retries) and the
// time all calls of the invocation spend on the API together (`apiTimeouts.total`; the time the
// delegates run between the lookups and the status write does not count against it), and counts
// requests so tests and benchmarks can assert "2 + k".
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni/netconf.h"
#include "http/http.h"
#include "http/kubeconfig.h"
#include "http/retry.h"
#include "k8s/api_client.h"
#include "k8s/pod.h"

namespace manifold::engine {

struct Services;

/// The API calls of one invocation.
class KubeAccess {
 public:
  /// Finds credentials for `config` through `services` (no request is made). `pod_uid` is the UID
  /// of the pod the call was started for (K8S_POD_UID, "" when unknown), told to the node agent's
  /// relay so that it may answer the pod's lookups from memory.
  KubeAccess(const Services& services, const cni::MetaConfig& config, std::string pod_uid = {});
  ~KubeAccess();
  KubeAccess(const KubeAccess&) = delete;
  KubeAccess& operator=(const KubeAccess&) = delete;

  /// True when a kubeconfig or the in-cluster service account was found.
  bool configured() const { return auth_.has_value(); }
  /// GET the pod, decoded (k8s/pod.h: CniError(Decoding) for an answer of the wrong shape).
  k8s::Pod get_pod(const std::string& ns, const std::string& name);
  /// GET a NetworkAttachmentDefinition.
  Json get_nad(const std::string& ns, const std::string& name);
  /// GET every NetworkAttachmentDefinition of `keys` in one batch (one round trip): one outcome per
  /// key, in order, holding the object or the error get_nad would have thrown.
  std::vector<k8s::ApiOutcome> get_nads(const std::vector<k8s::ObjectKey>& keys);
  /// GET a DRA ResourceClaim.
  Json get_resource_claim(const std::string& ns, const std::string& name);
  /// LIST the DRA ResourceSlices of `driver` on `node`.
  Json list_resource_slices(const std::string& node, const std::string& driver);
  /// LIST the MultiNetworkPolicies of a namespace.
  Json list_multi_network_policies(const std::string& ns);
  /// One page of a LIST (k8s::ApiClient::list_page).
  Json list_page(const std::string& resource, const std::string& collection, const std::string& query,
                 std::string_view list_kind, const std::string& accept, int limit, const std::string& continue_token);
  /// PUT pods/status.
  Json update_pod_status(const std::string& ns, const std::string& name, const Json& pod);
  /// POST an Event: one attempt, no retry (an Event is best effort and must not delay the ADD).
  void create_event(const std::string& ns, const Json& event);
  /// POST Events in one batch, one attempt each: one outcome per event.
  std::vector<k8s::ApiOutcome> create_events(const std::string& ns, const std::vector<Json>& events);
  /// PUT pods/status with `events` POSTed behind it in the same batch (one attempt each): the PUT's
  /// outcome first, then one per event.
  std::vector<k8s::ApiOutcome> update_pod_status_with_events(const std::string& ns, const std::string& name,
                                                             const Json& pod, const std::vector<Json>& events);
  /// HTTP requests made so far (retries included).
  int requests_made() const { return requests_; }
  /// Time spent in API calls so far (what `apiTimeouts.total` bounds).
  std::chrono::milliseconds api_time() const { return spent_; }

 private:
  k8s::ApiClient client();
  template <class F>
  auto call(F&& f);

  const Services& services_;
  const cni::MetaConfig& config_;
  std::string pod_uid_;
  std::optional<http::ClusterAuth> auth_;
  std::unique_ptr<http::HttpTransport> transport_;
  std::chrono::milliseconds spent_{0};
  int requests_ = 0;
};

}  // namespace manifold::engine
