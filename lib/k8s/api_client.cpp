// Kubernetes API client: path building with DNS-1123 validation, request headers and bearer token,
// Status parsing, and error messages that name the object and never contain the token. The retry
// loop that runs every call, alone or in a batch, is in api_batch.cpp.
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

/// Quotes untrusted text for a message: printable ASCII kept, everything else escaped, truncated.
std::string quote(std::string_view text) { return util::quote_bytes(text, 80); }

std::string trim_token(std::string_view s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

std::string user_agent() { return std::string("manifold/") + MANIFOLD_VERSION; }

}  // namespace

ApiClient::ApiClient(http::HttpTransport& transport, http::ClusterAuth auth, http::RetryPolicy policy,
                     util::Sleeper& sleeper, util::Clock& clock)
    : own_files_(std::make_unique<util::RealFileReader>()),
      own_jitter_(std::make_unique<http::RandomJitter>()),
      transport_(transport),
      auth_(std::move(auth)),
      base_path_(http::parse_server_url(auth_.server).base_path),
      policy_(policy),
      sleeper_(sleeper),
      clock_(clock),
      files_(*own_files_),
      jitter_(*own_jitter_) {}

ApiClient::ApiClient(http::HttpTransport& transport, http::ClusterAuth auth, http::RetryPolicy policy,
                     util::Sleeper& sleeper, util::Clock& clock, util::FileReader& files, http::JitterSource& jitter)
    : transport_(transport),
      auth_(std::move(auth)),
      base_path_(http::parse_server_url(auth_.server).base_path),
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

namespace {

ApiClient::Call nad_call(const ObjectKey& key) {
  require_namespace(key.ns);
  require_name("NetworkAttachmentDefinition", key.name);
  return {"network-attachment-definitions",
          key.ns,
          key.name,
          "/apis/k8s.cni.cncf.io/v1/namespaces/" + key.ns + "/network-attachment-definitions/" + key.name,
          "GET",
          {},
          "NetworkAttachmentDefinition",
          true};
}

ApiClient::Call status_call(const std::string& ns, const std::string& name, const Json& pod) {
  require_namespace(ns);
  require_name("pod", name);
  if (!pod.is_object())
    throw cni::CniError(cni::ErrorCode::Internal, "update_pod_status: the pod to write is not a JSON object");
  std::string body;
  try {
    body = pod.dump();
  } catch (const Json::exception& e) {
    throw cni::CniError(cni::ErrorCode::Decoding, "cannot serialise pod \"" + name + "\": " + e.what());
  }
  return {"pods",          ns,    name, "/api/v1/namespaces/" + ns + "/pods/" + name + "/status", "PUT",
          std::move(body), "Pod", true};
}

ApiClient::Call event_call(const std::string& ns, const Json& event) {
  require_namespace(ns);
  if (!event.is_object()) throw cni::CniError(cni::ErrorCode::Internal, "create_event: the event is not a JSON object");
  std::string name;
  if (auto meta = event.find("metadata"); meta != event.end() && meta->is_object()) {
    if (auto n = meta->find("name"); n != meta->end() && n->is_string()) name = n->get<std::string>();
  }
  return {"events", ns,
          name,     "/api/v1/namespaces/" + ns + "/events",
          "POST",   event.dump(-1, ' ', false, Json::error_handler_t::replace),
          {},       false};
}

}  // namespace

Json ApiClient::get_pod(const std::string& ns, const std::string& name) {
  require_namespace(ns);
  require_name("pod", name);
  return call_for_object({"pods", ns, name, "/api/v1/namespaces/" + ns + "/pods/" + name, "GET", {}, "Pod", true});
}

Json ApiClient::get_nad(const std::string& ns, const std::string& name) {
  return call_for_object(nad_call({ns, name}));
}

Json ApiClient::update_pod_status(const std::string& ns, const std::string& name, const Json& pod) {
  return call_for_object(status_call(ns, name, pod));
}

void ApiClient::create_event(const std::string& ns, const Json& event) {
  std::vector<Call> calls;
  calls.push_back(event_call(ns, event));
  std::move(run(std::move(calls)).front()).take();
}

std::vector<ApiOutcome> ApiClient::get_nads(const std::vector<ObjectKey>& keys) {
  // A key that is not a valid name fails alone, as get_nad would; the others are still fetched.
  std::vector<ApiOutcome> out(keys.size());
  std::vector<Call> calls;
  std::vector<std::size_t> sent;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    try {
      calls.push_back(nad_call(keys[i]));
      sent.push_back(i);
    } catch (const cni::CniError& e) {
      out[i].error = std::make_exception_ptr(e);
    }
  }
  std::vector<ApiOutcome> answers = run(std::move(calls));
  for (std::size_t k = 0; k < sent.size(); ++k) out[sent[k]] = std::move(answers[k]);
  return out;
}

std::vector<ApiOutcome> ApiClient::create_events(const std::string& ns, const std::vector<Json>& events) {
  std::vector<Call> calls;
  for (const auto& event : events) calls.push_back(event_call(ns, event));
  return run(std::move(calls));
}

std::vector<ApiOutcome> ApiClient::update_pod_status_with_events(const std::string& ns, const std::string& name,
                                                                 const Json& pod, const std::vector<Json>& events) {
  std::vector<Call> calls;
  calls.push_back(status_call(ns, name, pod));
  for (const auto& event : events) calls.push_back(event_call(ns, event));
  return run(std::move(calls));
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
  return call_for_object({"resourceclaims",
                          ns,
                          name,
                          "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/" + name,
                          "GET",
                          {},
                          "ResourceClaim",
                          true});
}

Json ApiClient::list_of(Call call) {
  const std::string described = call.describe();
  Json list = call_for_object(std::move(call));
  if (!list.contains("items") || !list["items"].is_array())
    throw cni::CniError(cni::ErrorCode::Decoding, "Kubernetes API answer to GET " + described + " has no items list");
  return list;
}

Json ApiClient::list_resource_slices(const std::string& node, const std::string& driver) {
  require_name("DRA driver", driver);
  std::string selector = "spec.driver=" + driver;
  if (!node.empty()) {
    require_name("node", node);
    selector = "spec.nodeName=" + node + "," + selector;
  }
  Call t{"resourceslices",
         "",
         "",
         "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=" + query_value(selector),
         "GET",
         {},
         "ResourceSliceList",
         true};
  return list_of(std::move(t));
}

Json ApiClient::list_multi_network_policies(const std::string& ns) {
  require_namespace(ns);
  Call t{"multi-networkpolicies",
         ns,
         "",
         "/apis/k8s.cni.cncf.io/v1beta1/namespaces/" + ns + "/multi-networkpolicies",
         "GET",
         {},
         "MultiNetworkPolicyList",
         true};
  return list_of(std::move(t));
}

Json ApiClient::list_nads(const std::string& ns) {
  require_namespace(ns);
  Call t{"network-attachment-definitions",
         ns,
         "",
         "/apis/k8s.cni.cncf.io/v1/namespaces/" + ns + "/network-attachment-definitions",
         "GET",
         {},
         "NetworkAttachmentDefinitionList",
         true};
  return list_of(std::move(t));
}

Json ApiClient::list_node_pods(const std::string& node) {
  Call t{"pods", "", "", "/api/v1/pods?" + node_selector(node), "GET", {}, "PodList", true};
  return list_of(std::move(t));
}

http::StreamEnd ApiClient::watch_node_pods(const std::string& node, const std::string& resource_version,
                                           int timeout_seconds, const http::StreamOptions& options,
                                           const std::function<bool(std::string_view)>& on_data) {
  return watch_collection("pods", "/api/v1/pods", node_selector(node), resource_version, timeout_seconds, {}, options,
                          on_data);
}

Json ApiClient::call_for_object(Call call) {
  std::vector<Call> calls;
  calls.push_back(std::move(call));
  return std::move(run(std::move(calls)).front()).take();
}

std::string read_bearer_token(const http::ClusterAuth& auth, util::FileReader& files) {
  std::string token = auth.token;
  if (!auth.token_file.empty()) {
    try {
      try {
        token = trim_token(files.read(auth.token_file, kMaxTokenFileBytes));
      } catch (const util::IoError& e) {
        throw cni::CniError(cni::ErrorCode::Io, e.msg());
      }
      if (!http::is_valid_bearer_token(token))
        throw cni::CniError(cni::ErrorCode::InvalidConfig,
                            "Kubernetes bearer token file " + auth.token_file +
                                " is empty or contains whitespace, control or non-ASCII characters");
    } catch (const cni::CniError& e) {
      if (auth.token.empty()) {
        if (e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig)) throw;
        throw cni::CniError(cni::ErrorCode::InvalidConfig, "Kubernetes bearer token: " + e.msg());
      }
      util::log_warning("cannot use the token file, falling back to the kubeconfig's token: ", e.msg());
      token = auth.token;
    }
  }
  return token;
}

const std::string& ApiClient::bearer_token() {
  if (!token_) token_ = read_bearer_token(auth_, files_);
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

ApiError ApiClient::error_for_response(const Call& target, const http::HttpResponse& response) const {
  const std::string& method = target.method;
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

void ApiClient::add_headers(http::HttpRequest& request, const std::string& accept) {
  const std::string& token = bearer_token();
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  request.headers.emplace_back("Accept", accept.empty() ? "application/json" : accept);
  request.headers.emplace_back("User-Agent", user_agent());
  if (!request.body.empty()) request.headers.emplace_back("Content-Type", "application/json");
}

}  // namespace manifold::k8s
