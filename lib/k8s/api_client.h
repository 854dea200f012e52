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
#include "k8s/http.h"
#include "k8s/kubeconfig.h"
#include "k8s/retry.h"
#include "util/clock.h"
#include "util/file_reader.h"
#include "util/json.h"

namespace manifold::k8s {

/// An error answer (or no answer) from the API server. Code 103 (Kubernetes).
class ApiError : public cni::CniError {
 public:
  /// `http_status` is 0 when no HTTP answer was received (connection or TLS failure).
  ApiError(int http_status, std::string reason, std::string api_message, std::string msg);
  /// The HTTP status of the last answer, 0 when there was none.
  int http_status() const noexcept { return http_status_; }
  /// The Status reason ("NotFound", "Conflict", …) or the standard reason for the HTTP status.
  const std::string& reason() const noexcept { return reason_; }
  /// The Status message sent by the server (sanitised), "" when none.
  const std::string& api_message() const noexcept { return api_message_; }
  /// True for 404.
  bool not_found() const noexcept { return http_status_ == 404; }
  /// True for 409.
  bool conflict() const noexcept { return http_status_ == 409; }

 private:
  int http_status_;
  std::string reason_;
  std::string api_message_;
};

/// The fields of a Kubernetes `Status` object that matter for error reporting.
struct ApiStatus {
  std::string reason;   ///< e.g. "NotFound"; may be empty
  std::string message;  ///< e.g. `pods "web-1" not found`; may be empty
  int code = 0;         ///< the HTTP code the server put into the Status, 0 when absent
};

/// Parses `body` as a Kubernetes Status (`"kind": "Status"`); nullopt for anything else.
std::optional<ApiStatus> parse_status(std::string_view body);

/// The Kubernetes reason name for an HTTP status (404 → "NotFound", 429 → "TooManyRequests"), or "".
std::string_view reason_for_status(int status);

/// True for a DNS-1123 label: 1–63 of [a-z0-9-], starting and ending alphanumeric (namespaces).
bool is_dns1123_label(std::string_view text);

/// True for a DNS-1123 subdomain: 1–253 chars, dot-separated DNS-1123 label syntax (object names).
bool is_dns1123_subdomain(std::string_view text);

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
  /// HTTP requests sent so far (every attempt counts, retries included).
  int requests_made() const { return requests_; }

 private:
  struct Target;
  Json call_for_object(const std::string& method, const Target& target, std::string body, std::string_view kind);
  HttpResponse execute(HttpRequest request, const Target& target);
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
