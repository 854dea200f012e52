// What the Kubernetes API answers besides objects, and the names it accepts: ApiError (an error
// answer or none, with the Status reason and message), the parsing of a `Status` body, the reason
// name of an HTTP status, and the DNS-1123 syntax of namespaces and object names. Shared by the
// API client and the node agent. Pure: no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cni/error.h"

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

}  // namespace manifold::k8s
