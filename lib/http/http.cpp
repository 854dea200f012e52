// HTTP transport seam: response header lookup, TransportError classification, the API server URL
// parser, the refusal of transports that cannot stream, batches sent one request at a time (for
// transports that cannot pipeline), and the scripted FakeHttpTransport used by
// unit tests.
#include "http/http.h"
#include "util/ascii.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>

namespace manifold::http {
namespace {

constexpr std::size_t kMaxUrlLength = 2048;

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && util::iequals_ascii(s.substr(0, prefix.size()), prefix);
}

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool is_ipv6(const std::string& s) {
  in6_addr a{};
  return ::inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

/// True for a DNS host name: dot-separated labels of [A-Za-z0-9-], 1–63 chars, not starting or
/// ending with '-', 253 chars at most.
bool is_host_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

bool is_path_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("-._~!$&'()*+,;=:@%/").find(c) != std::string_view::npos;
}

}  // namespace

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (util::iequals_ascii(key, name)) return value;
  return {};
}

TransportError::TransportError(Kind kind, std::string msg)
    : cni::CniError(cni::ErrorCode::Kubernetes, std::move(msg)), kind_(kind) {}

bool TransportError::retryable() const noexcept {
  switch (kind_) {
    case Kind::Resolve:
    case Kind::Connect:
    case Kind::Tls:
    case Kind::Timeout:
    case Kind::Closed:
      return true;
    case Kind::TlsVerify:
    case Kind::Protocol:
    case Kind::TooLarge:
      return false;
  }
  return false;
}

std::string ServerUrl::authority() const {
  std::string h = host_is_ipv6 ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string ServerUrl::to_string() const { return "https://" + authority() + base_path; }

namespace {

/// Builds the error for a rejected server URL (the URL itself is shown unless it holds user info
/// or is not printable).
using UrlFailure = std::function<cni::CniError(const std::string&)>;

/// Fills the host fields of `out` from `authority` ("host[:port]" or "[v6][:port]"); returns the
/// port text, or nullopt when the authority names no port.
std::optional<std::string_view> parse_authority(std::string_view authority, ServerUrl& out, const UrlFailure& fail) {
  std::optional<std::string_view> port_text;
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw fail("unterminated [IPv6] address");
    out.host = std::string(authority.substr(1, close - 1));
    if (!is_ipv6(out.host)) throw fail("\"" + out.host + "\" is not a valid IPv6 address");
    out.host_is_ip = out.host_is_ipv6 = true;
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw fail("unexpected characters after the [IPv6] address");
      port_text = after.substr(1);
    }
    return port_text;
  }
  std::size_t colon = authority.find(':');
  if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos)
    throw fail("IPv6 addresses must be written in brackets, e.g. https://[fd00::1]:6443");
  out.host = std::string(authority.substr(0, colon));
  if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  if (out.host.empty()) throw fail("the host is missing");
  if (is_ipv4(out.host)) {
    out.host_is_ip = true;
  } else if (out.host.find_first_not_of("0123456789.") == std::string::npos) {
    throw fail("\"" + out.host + "\" is not a valid IPv4 address");
  } else if (!is_host_name(out.host)) {
    throw fail("\"" + out.host + "\" is not a valid host name");
  }
  return port_text;
}

/// The port number `text` names (1-65535).
std::uint16_t parse_port(std::string_view text, const UrlFailure& fail) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos)
    throw fail("the port must be a number from 1 to 65535");
  unsigned long port = std::stoul(std::string(text));
  if (port == 0 || port > 65535) throw fail("the port must be a number from 1 to 65535");
  return static_cast<std::uint16_t>(port);
}

}  // namespace

ServerUrl parse_server_url(std::string_view url) {
  const bool has_user_info = url.find('@') != std::string_view::npos;
  const UrlFailure fail = [&](const std::string& why) -> cni::CniError {
    bool printable =
        url.size() <= kMaxUrlLength && std::all_of(url.begin(), url.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    std::string shown = (has_user_info || !printable) ? std::string() : " \"" + std::string(url) + "\"";
    return cni::CniError(cni::ErrorCode::InvalidConfig, "invalid Kubernetes API server URL" + shown + ": " + why);
  };

  if (url.empty()) throw fail("it is empty");
  if (url.size() > kMaxUrlLength) throw fail("it is longer than " + std::to_string(kMaxUrlLength) + " characters");
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      throw fail("it contains whitespace or control characters");
  if (istarts_with(url, "http://")) throw fail("only https:// is supported");
  if (!istarts_with(url, "https://")) throw fail("it must start with https://");
  std::string_view rest = url.substr(8);
  if (rest.find_first_of("?#") != std::string_view::npos) throw fail("it must not contain a query or fragment");

  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) throw fail("it must not contain user info");

  ServerUrl out;
  if (std::optional<std::string_view> port_text = parse_authority(authority, out, fail))
    out.port = parse_port(*port_text, fail);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  for (char c : path)
    if (!is_path_char(c)) throw fail("the path contains an invalid character");
  out.base_path = std::string(path);
  return out;
}

StreamResult HttpTransport::stream(const HttpRequest& request, const StreamOptions&,
                                   const std::function<bool(std::string_view)>&) {
  throw cni::CniError(cni::ErrorCode::Internal,
                      "this HTTP transport cannot stream (" + request.method + " " + request.target + ")");
}

std::vector<BatchOutcome> HttpTransport::send_batch(const std::vector<HttpRequest>& requests,
                                                    std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<BatchOutcome> out;
  out.reserve(requests.size());
  for (const auto& request : requests) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    try {
      out.emplace_back(send(request, std::max(left, milliseconds(1))));
    } catch (const TransportError& e) {
      out.emplace_back(e);
    }
  }
  return out;
}

void FakeHttpTransport::push_response(HttpResponse response) { script_.emplace_back(std::move(response)); }

void FakeHttpTransport::push_response(int status, std::string body, HttpHeaders headers) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  push_response(std::move(r));
}

void FakeHttpTransport::push_error(TransportError error) { script_.emplace_back(std::move(error)); }

void FakeHttpTransport::push_stream(int status, std::vector<std::string> pieces,
                                    std::optional<TransportError> end_error, HttpHeaders headers) {
  script_.emplace_back(ScriptedStream{status, std::move(pieces), std::move(end_error), std::move(headers)});
}

FakeHttpTransport::Answer FakeHttpTransport::next_answer(const HttpRequest& request,
                                                         std::chrono::milliseconds timeout) {
  requests_.push_back(request);
  timeouts_.push_back(timeout);
  if (hook_) hook_(request);
  if (script_.empty())
    throw cni::CniError(cni::ErrorCode::Internal,
                        "FakeHttpTransport: no scripted answer for " + request.method + " " + request.target);
  Answer next = std::move(script_.front());
  script_.pop_front();
  if (auto* error = std::get_if<TransportError>(&next)) throw *error;
  return next;
}

HttpResponse FakeHttpTransport::send(const HttpRequest& request, std::chrono::milliseconds timeout) {
  Answer next = next_answer(request, timeout);
  if (std::holds_alternative<ScriptedStream>(next))
    throw cni::CniError(cni::ErrorCode::Internal, "FakeHttpTransport: send() of " + request.method + " " +
                                                      request.target + " met a scripted stream answer");
  return std::get<HttpResponse>(std::move(next));
}

std::vector<BatchOutcome> FakeHttpTransport::send_batch(const std::vector<HttpRequest>& requests,
                                                        std::chrono::milliseconds timeout) {
  batches_.push_back(requests.size());
  std::vector<BatchOutcome> out;
  for (const auto& request : requests) {
    try {
      out.emplace_back(send(request, timeout));
    } catch (const TransportError& e) {
      out.emplace_back(e);
    }
  }
  return out;
}

StreamResult FakeHttpTransport::stream(const HttpRequest& request, const StreamOptions& options,
                                       const std::function<bool(std::string_view)>& on_data) {
  Answer next = next_answer(request, options.open_timeout);
  ScriptedStream scripted;
  if (auto* response = std::get_if<HttpResponse>(&next)) {
    scripted.status = response->status;
    scripted.headers = std::move(response->headers);
    if (!response->body.empty()) scripted.pieces.push_back(std::move(response->body));
  } else {
    scripted = std::get<ScriptedStream>(std::move(next));
  }
  StreamResult result;
  result.head.status = scripted.status;
  result.head.headers = std::move(scripted.headers);
  if (scripted.status < 200 || scripted.status > 299) {
    for (const auto& piece : scripted.pieces) result.head.body += piece;
  } else {
    for (const auto& piece : scripted.pieces) {
      if ((options.on_tick && !options.on_tick()) || !on_data(piece)) {
        result.end = StreamEnd::Stopped;
        return result;
      }
    }
  }
  if (scripted.end_error) throw *scripted.end_error;
  return result;
}

}  // namespace manifold::http
