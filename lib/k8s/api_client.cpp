// Kubernetes API client: path building with DNS-1123 validation, request headers and bearer token,
// the retry loop over HttpTransport driven by RetryBudget, Status parsing, and error messages that
// name the object and never contain the token.
#include "k8s/api_client.h"

#include <functional>
#include <iomanip>
#include <sstream>

#include "util/error.h"
#include "util/log.h"
#include "util/quote.h"

namespace manifold::k8s {
namespace {

constexpr std::size_t kMaxTokenFileBytes = 64 * 1024;
constexpr std::size_t kMaxServerMessage = 1024;
/// Deepest nesting accepted in an answer (pods, managedFields included, nest about 20 levels).
constexpr int kMaxAnswerDepth = 256;

/// Quotes untrusted text for a message: printable ASCII kept, everything else escaped, truncated.
std::string quote(std::string_view text) { return util::quote_bytes(text, 80); }

std::string format_seconds(milliseconds d) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(d.count()) / 1000.0 << "s";
  return os.str();
}

std::string trim(std::string_view s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

std::string user_agent() { return std::string("manifold/") + MANIFOLD_VERSION; }

}  // namespace

/// A validated API object location, with its human description for messages.
struct ApiClient::Target {
  std::string resource;  ///< "pods", "network-attachment-definitions", "events"
  std::string ns;
  std::string name;  ///< may be empty (event creation)
  std::string path;  ///< without the server's base path

  std::string describe() const {
    std::string what = resource + (name.empty() ? std::string() : " \"" + name + "\"");
    return what + (ns.empty() ? " in every namespace" : " in namespace \"" + ns + "\"");
  }
};

ApiClient::ApiClient(HttpTransport& transport, ClusterAuth auth, RetryPolicy policy, util::Sleeper& sleeper,
                     util::Clock& clock)
    : own_files_(std::make_unique<util::RealFileReader>()),
      own_jitter_(std::make_unique<RandomJitter>()),
      transport_(transport),
      auth_(std::move(auth)),
      base_path_(parse_server_url(auth_.server).base_path),
      policy_(policy),
      sleeper_(sleeper),
      clock_(clock),
      files_(*own_files_),
      jitter_(*own_jitter_) {}

ApiClient::ApiClient(HttpTransport& transport, ClusterAuth auth, RetryPolicy policy, util::Sleeper& sleeper,
                     util::Clock& clock, util::FileReader& files, JitterSource& jitter)
    : transport_(transport),
      auth_(std::move(auth)),
      base_path_(parse_server_url(auth_.server).base_path),
      policy_(policy),
      sleeper_(sleeper),
      clock_(clock),
      files_(files),
      jitter_(jitter) {}

namespace {

void require_namespace(const std::string& ns) {
  if (!is_dns1123_label(ns))
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "invalid Kubernetes namespace " + quote(ns) + ": must be a DNS-1123 label");
}

void require_name(const std::string& what, const std::string& name) {
  if (!is_dns1123_subdomain(name))
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "invalid " + what + " name " + quote(name) + ": must be a DNS-1123 subdomain");
}

}  // namespace

Json ApiClient::get_pod(const std::string& ns, const std::string& name) {
  require_namespace(ns);
  require_name("pod", name);
  Target t{"pods", ns, name, "/api/v1/namespaces/" + ns + "/pods/" + name};
  return call_for_object("GET", t, {}, "Pod");
}

Json ApiClient::get_nad(const std::string& ns, const std::string& name) {
  require_namespace(ns);
  require_name("NetworkAttachmentDefinition", name);
  Target t{"network-attachment-definitions", ns, name,
           "/apis/k8s.cni.cncf.io/v1/namespaces/" + ns + "/network-attachment-definitions/" + name};
  return call_for_object("GET", t, {}, "NetworkAttachmentDefinition");
}

Json ApiClient::update_pod_status(const std::string& ns, const std::string& name, const Json& pod) {
  require_namespace(ns);
  require_name("pod", name);
  if (!pod.is_object())
    throw cni::CniError(cni::ErrorCode::Internal, "update_pod_status: the pod to write is not a JSON object");
  Target t{"pods", ns, name, "/api/v1/namespaces/" + ns + "/pods/" + name + "/status"};
  std::string body;
  try {
    body = pod.dump();
  } catch (const Json::exception& e) {
    throw cni::CniError(cni::ErrorCode::Decoding, "cannot serialise pod \"" + name + "\": " + e.what());
  }
  return call_for_object("PUT", t, std::move(body), "Pod");
}

void ApiClient::create_event(const std::string& ns, const Json& event) {
  require_namespace(ns);
  if (!event.is_object()) throw cni::CniError(cni::ErrorCode::Internal, "create_event: the event is not a JSON object");
  std::string name;
  if (auto meta = event.find("metadata"); meta != event.end() && meta->is_object()) {
    if (auto n = meta->find("name"); n != meta->end() && n->is_string()) name = n->get<std::string>();
  }
  Target t{"events", ns, name, "/api/v1/namespaces/" + ns + "/events"};
  HttpRequest request{"POST", base_path_ + t.path, {}, event.dump(-1, ' ', false, Json::error_handler_t::replace)};
  execute(std::move(request), t);
}

namespace {

// A query parameter value, percent-encoded (everything but RFC 3986's unreserved characters).
std::string query_value(std::string_view value) { return util::percent_encode(value, "-._~"); }

std::string node_selector(const std::string& node) {
  require_name("node", node);
  return "fieldSelector=" + query_value("spec.nodeName=" + node);
}

}  // namespace

Json ApiClient::get_resource_claim(const std::string& ns, const std::string& name) {
  require_namespace(ns);
  require_name("ResourceClaim", name);
  Target t{"resourceclaims", ns, name, "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/" + name};
  return call_for_object("GET", t, {}, "ResourceClaim");
}

Json ApiClient::list_resource_slices(const std::string& node, const std::string& driver) {
  require_name("DRA driver", driver);
  std::string selector = "spec.driver=" + driver;
  if (!node.empty()) {
    require_name("node", node);
    selector = "spec.nodeName=" + node + "," + selector;
  }
  Target t{"resourceslices", "", "", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=" + query_value(selector)};
  Json list = call_for_object("GET", t, {}, "ResourceSliceList");
  if (!list.contains("items") || !list["items"].is_array())
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "Kubernetes API answer to GET " + t.describe() + " has no items list");
  return list;
}

Json ApiClient::list_node_pods(const std::string& node) {
  Target t{"pods", "", "", "/api/v1/pods?" + node_selector(node)};
  Json list = call_for_object("GET", t, {}, "PodList");
  if (!list.contains("items") || !list["items"].is_array())
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "Kubernetes API answer to GET " + t.describe() + " has no items list");
  return list;
}

StreamEnd ApiClient::watch_node_pods(const std::string& node, const std::string& resource_version, int timeout_seconds,
                                     const StreamOptions& options,
                                     const std::function<bool(std::string_view)>& on_data) {
  std::string path = "/api/v1/pods?" + node_selector(node) +
                     "&watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!resource_version.empty()) path += "&resourceVersion=" + query_value(resource_version);
  Target t{"pods", "", "", path};
  HttpRequest request{"GET", base_path_ + path, {}, {}};
  add_headers(request);
  ++requests_;
  StreamResult result;
  try {
    result = transport_.stream(request, options, on_data);
  } catch (const TransportError& e) {
    throw ApiError(0, "", "", "Kubernetes API WATCH " + t.describe() + " failed: " + e.msg());
  }
  if (result.head.status < 200 || result.head.status >= 300) throw error_for_response("WATCH", t, result.head);
  return result.end;
}

Json ApiClient::call_for_object(const std::string& method, const Target& target, std::string body,
                                std::string_view kind) {
  HttpRequest request{method, base_path_ + target.path, {}, std::move(body)};
  HttpResponse response = execute(std::move(request), target);
  const std::string what = "Kubernetes API answer to " + method + " " + target.describe();
  Json j;
  try {
    // Bounded nesting: the pod is printed again for PUT, and printing recurses.
    j = Json::parse(response.body, [&what](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxAnswerDepth)
        throw cni::CniError(cni::ErrorCode::Decoding,
                            what + " is nested deeper than " + std::to_string(kMaxAnswerDepth) + " levels");
      return true;
    });
  } catch (const Json::parse_error& e) {
    throw cni::CniError(cni::ErrorCode::Decoding,
                        what + " is not valid JSON (error at byte " + std::to_string(e.byte) + ")");
  } catch (const Json::exception&) {  // out_of_range: a number beyond the range of a double
    throw cni::CniError(cni::ErrorCode::Decoding, what + " is not valid JSON (a number is out of range)");
  }
  if (!j.is_object()) throw cni::CniError(cni::ErrorCode::Decoding, what + " is not a JSON object");
  if (auto k = j.find("kind"); k != j.end() && k->is_string() && k->get<std::string>() != kind)
    throw cni::CniError(cni::ErrorCode::Decoding, what + " has kind " + quote(sanitize(k->get<std::string>())) +
                                                      ", expected " + std::string(kind));
  return j;
}

const std::string& ApiClient::bearer_token() {
  if (token_) return *token_;
  std::string token = auth_.token;
  if (!auth_.token_file.empty()) {
    try {
      try {
        token = trim(files_.read(auth_.token_file, kMaxTokenFileBytes));
      } catch (const util::IoError& e) {
        throw cni::CniError(cni::ErrorCode::Io, e.msg());
      }
      if (!is_valid_bearer_token(token))
        throw cni::CniError(cni::ErrorCode::InvalidConfig,
                            "Kubernetes bearer token file " + auth_.token_file +
                                " is empty or contains whitespace, control or non-ASCII characters");
    } catch (const cni::CniError& e) {
      if (auth_.token.empty()) {
        if (e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig)) throw;
        throw cni::CniError(cni::ErrorCode::InvalidConfig, "Kubernetes bearer token: " + e.msg());
      }
      util::log_warning("cannot use the token file, falling back to the kubeconfig's token: ", e.msg());
      token = auth_.token;
    }
  }
  token_ = std::move(token);
  return *token_;
}

std::string ApiClient::sanitize(std::string_view server_text) const {
  std::string out;
  for (char c : server_text.substr(0, kMaxServerMessage)) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? ' ' : c;
  }
  if (server_text.size() > kMaxServerMessage) out += "...";
  if (token_ && !token_->empty()) {
    for (std::size_t pos = out.find(*token_); pos != std::string::npos; pos = out.find(*token_, pos))
      out.replace(pos, token_->size(), "<redacted>");
  }
  return out;
}

ApiError ApiClient::error_for_response(const std::string& method, const Target& target,
                                       const HttpResponse& response) const {
  std::optional<ApiStatus> status = parse_status(response.body);
  std::string reason =
      status && !status->reason.empty() ? sanitize(status->reason) : std::string(reason_for_status(response.status));
  std::string message = status ? sanitize(status->message) : std::string();
  std::string text;
  if (response.status == 404 && !target.name.empty()) {
    text = target.resource + " \"" + target.name + "\" not found in namespace \"" + target.ns + "\"";
  } else {
    text = "Kubernetes API " + method + " " + target.describe() + " failed: HTTP " + std::to_string(response.status) +
           (reason.empty() ? "" : " " + reason);
    if (!message.empty()) text += ": " + message;
    if (response.status == 401) text += " (check the kubeconfig's token or client certificate)";
    if (response.status == 403) text += " (check manifold's RBAC permissions)";
  }
  return ApiError(response.status, std::move(reason), std::move(message), std::move(text));
}

void ApiClient::add_headers(HttpRequest& request) {
  const std::string& token = bearer_token();
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("User-Agent", user_agent());
  if (!request.body.empty()) request.headers.emplace_back("Content-Type", "application/json");
}

HttpResponse ApiClient::execute(HttpRequest request, const Target& target) {
  add_headers(request);

  RetryBudget budget(policy_, clock_, jitter_);
  int last_status = 0;
  std::string last_reason, last_message, last_transport_error;
  for (;;) {
    std::optional<milliseconds> timeout = budget.begin_attempt();
    if (!timeout) break;
    std::optional<milliseconds> retry_after;
    try {
      ++requests_;
      HttpResponse response = transport_.send(request, *timeout);
      if (response.status >= 200 && response.status < 300) return response;
      if (!is_retryable_status(response.status)) throw error_for_response(request.method, target, response);
      ApiError error = error_for_response(request.method, target, response);
      last_status = response.status;
      last_reason = error.reason();
      last_message = error.api_message();
      last_transport_error.clear();
      retry_after = parse_retry_after(response.header("Retry-After"));
      util::log_verbose("Kubernetes API ", request.method, " ", target.describe(), ": attempt ", budget.attempts(),
                        " answered HTTP ", response.status, ", will retry");
    } catch (const TransportError& e) {
      if (!e.retryable())
        throw ApiError(0, "", "", "Kubernetes API " + request.method + " " + target.describe() + " failed: " + e.msg());
      last_status = 0;
      last_transport_error = e.msg();
      util::log_verbose("Kubernetes API ", request.method, " ", target.describe(), ": attempt ", budget.attempts(),
                        " failed: ", e.msg());
    }
    std::optional<milliseconds> wait = budget.wait_before_retry(retry_after);
    if (!wait) break;
    sleeper_.sleep_for(*wait);
  }

  std::string over = " after " + std::to_string(budget.attempts()) + " attempt" + (budget.attempts() == 1 ? "" : "s") +
                     " over " + format_seconds(budget.elapsed());
  std::string why = budget.attempts_exhausted()
                        ? " (limit of " + std::to_string(policy_.max_attempts) + " attempts reached)"
                        : " (deadline of " + format_seconds(policy_.total_deadline) + " reached)";
  std::string text;
  if (last_status != 0) {
    text = "Kubernetes API still answering " + std::to_string(last_status) +
           (last_reason.empty() ? "" : " " + last_reason) + " to " + request.method + " " + target.describe() + over +
           why + (last_message.empty() ? "" : ": " + last_message);
  } else {
    text = "Kubernetes API unreachable for " + request.method + " " + target.describe() + over + why +
           (last_transport_error.empty() ? "" : ": " + last_transport_error);
  }
  throw ApiError(last_status, last_reason, last_message, std::move(text));
}

}  // namespace manifold::k8s
