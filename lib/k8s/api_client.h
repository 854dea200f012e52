// The Kubernetes API client manifold needs: GET a pod, GET a NetworkAttachmentDefinition, PUT a
// pod's status and POST an Event — exactly the verbs Multus's RBAC grants — plus what its own
// features read (DRA claims and slices, the node's pods for the agent, MultiNetworkPolicies). It builds validated
// request paths (namespace and name checked as DNS-1123 before they reach a URL), adds the bearer
// token, retries 429/5xx/connection failures within a RetryPolicy, turns error answers into an
// ApiError naming the object (using the server's Status reason and message), and insists that
// answers are JSON objects. Several calls can be made as one batch (every NAD of a pod; the status
// PUT with its events behind it): the transport pipelines them, so a batch costs one round trip, and
// only the calls whose answer is worth retrying are sent again. It never puts the token into a log
// line or an error.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cni/error.h"
#include "http/http.h"
#include "http/kubeconfig.h"
#include "http/retry.h"
#include "k8s/api_status.h"
#include "util/clock.h"
#include "util/file_reader.h"
#include "util/json.h"

namespace manifold::k8s {

/// The namespace and name of an API object.
struct ObjectKey {
  std::string ns;    ///< namespace
  std::string name;  ///< object name
};

/// The outcome of one call of a batch: the answer object, or what the call alone would have thrown.
struct ApiOutcome {
  Json object;               ///< the decoded answer (null for calls whose answer is not decoded, and on error)
  std::exception_ptr error;  ///< ApiError or CniError; null on success
  /// The answer object; rethrows the error instead when there is one.
  Json take() &&;
};

/// The bearer token of `auth` ("" for none): the token file's content when it names one (read now,
/// so a rotated token is used at once; an unreadable file falls back to the static token with a
/// warning), else the static token. Throws CniError(InvalidConfig) when the file is unusable and
/// there is no static token.
std::string read_bearer_token(const http::ClusterAuth& auth, util::FileReader& files);

/// Client for the few API calls manifold makes. One instance per invocation; not thread-safe.
class ApiClient {
 public:
  /// Uses the real file system (for token_file) and a random jitter source.
  ApiClient(http::HttpTransport& transport, http::ClusterAuth auth, http::RetryPolicy policy, util::Sleeper& sleeper,
            util::Clock& clock);
  /// Fully injected variant for tests.
  ApiClient(http::HttpTransport& transport, http::ClusterAuth auth, http::RetryPolicy policy, util::Sleeper& sleeper,
            util::Clock& clock, util::FileReader& files, http::JitterSource& jitter);

  /// GET /api/v1/namespaces/{ns}/pods/{name}.
  Json get_pod(const std::string& ns, const std::string& name);
  /// GET /apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions/{name}.
  Json get_nad(const std::string& ns, const std::string& name);
  /// PUT /api/v1/namespaces/{ns}/pods/{name}/status with `pod` (which carries its resourceVersion);
  /// returns the updated pod. A 409 is thrown as ApiError (conflict()) and not retried here.
  Json update_pod_status(const std::string& ns, const std::string& name, const Json& pod);
  /// POST /api/v1/namespaces/{ns}/events.
  void create_event(const std::string& ns, const Json& event);
  /// GETs every NetworkAttachmentDefinition of `keys` in one batch (one round trip on a pipelining
  /// transport), sending again only those whose answer is retryable, within one RetryPolicy. One
  /// outcome per key, in order: the object, or the error get_nad would have thrown for it (a key
  /// that is not a valid namespace and name is not sent; its outcome is CniError(InvalidConfig)).
  std::vector<ApiOutcome> get_nads(const std::vector<ObjectKey>& keys);
  /// POSTs `events` in namespace `ns` in one batch, each sent once (an Event is best effort and never
  /// retried). One outcome per event, in order.
  std::vector<ApiOutcome> create_events(const std::string& ns, const std::vector<Json>& events);
  /// update_pod_status() with `events` POSTed behind the PUT in the same batch (sent once each, as by
  /// create_events), so they cost no round trip of their own. The outcome of the PUT first (the
  /// updated pod, or an ApiError whose conflict() tells a 409), then one per event.
  std::vector<ApiOutcome> update_pod_status_with_events(const std::string& ns, const std::string& name, const Json& pod,
                                                        const std::vector<Json>& events);
  /// GET /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}.
  Json get_resource_claim(const std::string& ns, const std::string& name);
  /// GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName={node},spec.driver={driver}
  /// (the node term left out when `node` is empty): the ResourceSliceList. Throws
  /// CniError(InvalidConfig) for a node or driver that is not a DNS-1123 subdomain, CniError(Decoding)
  /// for an answer that is not a list.
  Json list_resource_slices(const std::string& node, const std::string& driver);
  /// GET /apis/k8s.cni.cncf.io/v1beta1/namespaces/{ns}/multi-networkpolicies: the namespace's
  /// MultiNetworkPolicyList. Throws CniError(InvalidConfig) for a namespace that is not a DNS-1123
  /// label, ApiError for an error answer (404 when the CRD is not installed), CniError(Decoding)
  /// for an answer that is not a list.
  Json list_multi_network_policies(const std::string& ns);
  /// GET /apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions: the namespace's
  /// NetworkAttachmentDefinitionList (a consistent read), with retries. Throws as
  /// list_multi_network_policies().
  Json list_nads(const std::string& ns);
  /// GET /api/v1/pods?fieldSelector=spec.nodeName%3D{node} (every namespace): the node's PodList,
  /// with retries like every call. Throws CniError(InvalidConfig) for a node name that is not a
  /// DNS-1123 subdomain, CniError(Decoding) for an answer that is not a PodList.
  Json list_node_pods(const std::string& node);
  /// WATCH of the node's pods from `resource_version` with bookmarks, ended by the server after
  /// `timeout_seconds`: one attempt (the caller's loop decides when to try again). The body is
  /// handed to `on_data` as it arrives. Throws ApiError for an answer outside 2xx (410 when the
  /// version is too old) and TransportError when the connection fails.
  http::StreamEnd watch_node_pods(const std::string& node, const std::string& resource_version, int timeout_seconds,
                                  const http::StreamOptions& options,
                                  const std::function<bool(std::string_view)>& on_data);
  /// One page of a LIST of `collection` (a path such as "/api/v1/pods", validated by the caller)
  /// with `query` (without '?'; may be empty) and `limit`/`continue` paging: the answer, which must
  /// be a `list_kind` with an items list. `accept` replaces the Accept header when not empty
  /// (e.g. metadata only: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").
  /// Retried like every call. Throws ApiError for an error answer, CniError(Decoding) otherwise.
  Json list_page(const std::string& resource, const std::string& collection, const std::string& query,
                 std::string_view list_kind, const std::string& accept, int limit, const std::string& continue_token);
  /// WATCH of `collection` with `query` from `resource_version` with bookmarks, like
  /// watch_node_pods (one attempt); `accept` as for list_page.
  http::StreamEnd watch_collection(const std::string& resource, const std::string& collection, const std::string& query,
                                   const std::string& resource_version, int timeout_seconds, const std::string& accept,
                                   const http::StreamOptions& options,
                                   const std::function<bool(std::string_view)>& on_data);
  /// HTTP requests sent so far (every attempt counts, retries included).
  int requests_made() const { return requests_; }
  /// One validated API call: the object's location (described in messages), what is sent, what the
  /// answer must be and whether a failure is worth another attempt.
  struct Call {
    std::string resource;  ///< "pods", "network-attachment-definitions", "events"
    std::string ns;        ///< "" for a cluster-wide call
    std::string name;      ///< may be empty (event creation)
    std::string path;      ///< without the server's base path
    std::string method = "GET";
    std::string body;
    std::string_view kind;  ///< the kind of the answer object; "" when the answer is not decoded
    bool retry = true;      ///< false: sent once (an Event)
    /// "pods \"p\" in namespace \"ns\"", for messages.
    std::string describe() const;
  };

 private:
  struct LastFailure;
  Json call_for_object(Call call);
  /// call_for_object() of a LIST: throws CniError(Decoding) when the answer has no items list.
  Json list_of(Call call);
  bool judge(const Call& call, const http::BatchOutcome& answer, int attempt, ApiOutcome& out, LastFailure& last,
             std::optional<std::chrono::milliseconds>& retry_after) const;
  std::vector<ApiOutcome> run(std::vector<Call> calls, const std::string& accept = {});
  Json decode(const http::HttpResponse& response, const Call& call) const;
  ApiError unanswered(const Call& call, const LastFailure& last, const http::RetryBudget& budget) const;
  void add_headers(http::HttpRequest& request, const std::string& accept = {});
  const std::string& bearer_token();
  std::string sanitize(std::string_view server_text) const;
  ApiError error_for_response(const Call& call, const http::HttpResponse& response) const;

  std::unique_ptr<util::FileReader> own_files_;
  std::unique_ptr<http::JitterSource> own_jitter_;
  http::HttpTransport& transport_;
  http::ClusterAuth auth_;
  std::string base_path_;
  http::RetryPolicy policy_;
  util::Sleeper& sleeper_;
  util::Clock& clock_;
  util::FileReader& files_;
  http::JitterSource& jitter_;
  std::optional<std::string> token_;
  int requests_ = 0;
};

}  // namespace manifold::k8s
