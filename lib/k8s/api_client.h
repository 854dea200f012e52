// The Kubernetes API client manifold needs: GET a pod, GET a NetworkAttachmentDefinition, PUT a
// pod's status and POST an Event — exactly the verbs Multus's RBAC grants. It builds validated
// request paths (namespace and name checked as DNS-1123 before they reach a URL), adds the bearer
// token, retries 429/5xx/connection failures within a RetryPolicy, turns error answers into an
// ApiError naming the object (using the server's Status reason and message), and insists that
// answers are JSON objects. It never puts the token into a log line or an error.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cni/error.h"
#include "k8s/api_status.h"
#include "k8s/http.h"
#include "k8s/kubeconfig.h"
#include "k8s/retry.h"
#include "util/clock.h"
#include "util/file_reader.h"
#include "util/json.h"

namespace manifold::k8s {

/// Client for the few API calls manifold makes. One instance per invocation; not thread-safe.
class ApiClient {
 public:
  /// Uses the real file system (for token_file) and a random jitter source.
  ApiClient(HttpTransport& transport, ClusterAuth auth, RetryPolicy policy, util::Sleeper& sleeper, util::Clock& clock);
  /// Fully injected variant for tests.
  ApiClient(HttpTransport& transport, ClusterAuth auth, RetryPolicy policy, util::Sleeper& sleeper, util::Clock& clock,
            util::FileReader& files, JitterSource& jitter);

  /// GET /api/v1/namespaces/{ns}/pods/{name}.
  Json get_pod(const std::string& ns, const std::string& name);
  /// GET /apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions/{name}.
  Json get_nad(const std::string& ns, const std::string& name);
  /// PUT /api/v1/namespaces/{ns}/pods/{name}/status with `pod` (which carries its resourceVersion);
  /// returns the updated pod. A 409 is thrown as ApiError (conflict()) and not retried here.
  Json update_pod_status(const std::string& ns, const std::string& name, const Json& pod);
  /// POST /api/v1/namespaces/{ns}/events.
  void create_event(const std::string& ns, const Json& event);
  /// GET /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}.
  Json get_resource_claim(const std::string& ns, const std::string& name);
  /// GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName={node},spec.driver={driver}
  /// (the node term left out when `node` is empty): the ResourceSliceList. Throws
  /// CniError(InvalidConfig) for a node or driver that is not a DNS-1123 subdomain, CniError(Decoding)
  /// for an answer that is not a list.
  Json list_resource_slices(const std::string& node, const std::string& driver);
  /// GET /api/v1/pods?fieldSelector=spec.nodeName%3D{node} (every namespace): the node's PodList,
  /// with retries like every call. Throws CniError(InvalidConfig) for a node name that is not a
  /// DNS-1123 subdomain, CniError(Decoding) for an answer that is not a PodList.
  Json list_node_pods(const std::string& node);
  /// WATCH of the node's pods from `resource_version` with bookmarks, ended by the server after
  /// `timeout_seconds`: one attempt (the caller's loop decides when to try again). The body is
  /// handed to `on_data` as it arrives. Throws ApiError for an answer outside 2xx (410 when the
  /// version is too old) and TransportError when the connection fails.
  StreamEnd watch_node_pods(const std::string& node, const std::string& resource_version, int timeout_seconds,
                            const StreamOptions& options, const std::function<bool(std::string_view)>& on_data);
  /// HTTP requests sent so far (every attempt counts, retries included).
  int requests_made() const { return requests_; }

 private:
  struct Target;
  Json call_for_object(const std::string& method, const Target& target, std::string body, std::string_view kind);
  HttpResponse execute(HttpRequest request, const Target& target);
  void add_headers(HttpRequest& request);
  const std::string& bearer_token();
  std::string sanitize(std::string_view server_text) const;
  ApiError error_for_response(const std::string& method, const Target& target, const HttpResponse& response) const;

  std::unique_ptr<util::FileReader> own_files_;
  std::unique_ptr<JitterSource> own_jitter_;
  HttpTransport& transport_;
  ClusterAuth auth_;
  std::string base_path_;
  RetryPolicy policy_;
  util::Sleeper& sleeper_;
  util::Clock& clock_;
  util::FileReader& files_;
  JitterSource& jitter_;
  std::optional<std::string> token_;
  int requests_ = 0;
};

}  // namespace manifold::k8s
