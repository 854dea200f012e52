// Kubernetes API client: path building with DNS-1123 validation, request headers and bearer token,
// the retry loop over HttpTransport driven by RetryBudget, Status parsing, and error messages that
// name the object and never contain the token.
#include "k8s/api_client.h"

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

bool is_alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/// Label syntax without the 63-character limit (shared by labels and subdomain parts).
bool is_label_syntax(std::string_view s) {
  if (s.empty() || !is_alnum_lower(s.front()) || !is_alnum_lower(s.back())) return false;
  for (char c : s)
    if (!is_alnum_lower(c) && c != '-') return false;
  return true;
}

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
    return what + " in namespace \"" + ns + "\"";
  }
};

ApiError::ApiError(int http_status, std::string reason, std::string api_message, std::string msg)
    : cni::CniError(cni::ErrorCode::Kubernetes, std::move(msg)),
      http_status_(http_status),
      reason_(std::move(reason)),
      api_message_(std::move(api_message)) {}

std::optional<ApiStatus> parse_status(std::string_view body) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string() || kind->get<std::string>() != "Status") return std::nullopt;
  ApiStatus status;
  if (auto it = j.find("reason"); it != j.end() && it->is_string()) status.reason = it->get<std::string>();
  if (auto it = j.find("message"); it != j.end() && it->is_string()) status.message = it->get<std::string>();
  if (auto it = j.find("code"); it != j.end() && it->is_number_integer()) {
    auto code = it->get<long long>();
    if (code >= 0 && code < 1000) status.code = static_cast<int>(code);
  }
  return status;
}

std::string_view reason_for_status(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 502:
      return "BadGateway";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

bool is_dns1123_label(std::string_view text) { return text.size() <= 63 && is_label_syntax(text); }

bool is_dns1123_subdomain(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = text.find('.', start);
    if (!is_label_syntax(text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

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

HttpResponse ApiClient::execute(HttpRequest request, const Target& target) {
  const std::string& token = bearer_token();
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("User-Agent", user_agent());
  if (!request.body.empty()) request.headers.emplace_back("Content-Type", "application/json");

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
