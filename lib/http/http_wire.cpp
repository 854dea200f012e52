// Implementation of the request wire format.
#include "http/http_wire.h"

#include <algorithm>
#include <cctype>

#include "cni/error.h"
#include "util/ascii.h"

namespace manifold::http {
namespace {

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

void validate_request(const HttpRequest& request) {
  auto bad = [](const std::string& what) {
    throw cni::CniError(cni::ErrorCode::Internal, "invalid HTTP request for the Kubernetes API: " + what);
  };
  if (request.method.empty() || !std::all_of(request.method.begin(), request.method.end(), is_token_char))
    bad("method is not an HTTP token");
  if (request.target.empty() || request.target.front() != '/') bad("target must start with '/'");
  for (char c : request.target)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      bad("target contains whitespace or control characters");
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) bad("a header name is not a token");
    for (char c : value)
      if (c == '\r' || c == '\n' || c == '\0') bad("header " + name + " contains a line break or NUL");
  }
}

std::string serialize_request(const HttpRequest& request, std::string_view authority) {
  // Content-Length as Beast's prepare_payload() sets it: for a body, and for the methods that
  // carry one even when it is empty; it then replaces any Content-Length the caller gave.
  const bool with_length =
      !request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "OPTIONS";
  const std::string length = std::to_string(request.body.size());
  std::size_t size = request.method.size() + request.target.size() + authority.size() + request.body.size() + 64;
  for (const auto& [name, value] : request.headers) size += name.size() + value.size() + 4;
  std::string wire;
  wire.reserve(size);
  wire.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\nHost: ");
  wire.append(authority).append("\r\n");
  for (const auto& [name, value] : request.headers) {
    if (with_length && util::iequals_ascii(name, "Content-Length")) continue;
    wire.append(name).append(": ").append(value).append("\r\n");
  }
  if (with_length) wire.append("Content-Length: ").append(length).append("\r\n");
  wire.append("\r\n").append(request.body);
  return wire;
}

}  // namespace manifold::http
