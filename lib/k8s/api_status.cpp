// Implementation of Status parsing, reason names and DNS-1123 name syntax.
#include "k8s/api_status.h"

#include "util/json.h"

namespace manifold::k8s {

namespace {

bool is_alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/// Label syntax without the 63-character limit (shared by labels and subdomain parts).
bool is_label_syntax(std::string_view s) {
  if (s.empty() || !is_alnum_lower(s.front()) || !is_alnum_lower(s.back())) return false;
  for (char c : s)
    if (!is_alnum_lower(c) && c != '-') return false;
  return true;
}

}  // namespace

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

}  // namespace manifold::k8s
