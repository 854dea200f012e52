// Implementation of the agent relay's frames: JSON payloads built and checked field by field (every
// frame is untrusted input on both sides; a request frame's values are counted as it is parsed), and
// length-prefixed frame I/O in chunks with poll() under a deadline.
#include "relay/relay_protocol.h"

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "cni/error.h"
#include "util/json_parse.h"

namespace manifold::relay {
namespace {

using Kind = http::TransportError::Kind;

constexpr std::array<std::pair<Kind, std::string_view>, 8> kKinds{{
    {Kind::Resolve, "resolve"},
    {Kind::Connect, "connect"},
    {Kind::Tls, "tls"},
    {Kind::TlsVerify, "tls-verify"},
    {Kind::Timeout, "timeout"},
    {Kind::Closed, "closed"},
    {Kind::Protocol, "protocol"},
    {Kind::TooLarge, "too-large"},
}};

/// Nesting allowed in a frame: the frame's own three levels (an API object travels as a string).
constexpr int kFrameDepth = 8;
constexpr long long kMaxTimeoutMs = 600000;
/// Bytes read at a time: the most a frame's buffer is ahead of the bytes received.
constexpr std::size_t kReadChunk = 64u << 10;

[[noreturn]] void bad(const std::string& what) {
  throw cni::CniError(cni::ErrorCode::Decoding, "agent relay frame: " + what);
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

/// The frame's JSON object, of at most `max_values` values (0: any number).
Json parse(const std::string& payload, std::size_t max_values) {
  struct TooMuch {};
  if (payload.find('\0') != std::string::npos) bad("not a JSON object");
  std::size_t values = 0;
  Json j;
  try {
    j = Json::parse(
        payload,
        [&values, max_values](int depth, Json::parse_event_t event, Json&) {
          if (depth > kFrameDepth) throw TooMuch{};
          bool counted = event == Json::parse_event_t::value || event == Json::parse_event_t::object_start ||
                         event == Json::parse_event_t::array_start;
          if (counted && max_values != 0 && ++values > max_values) throw TooMuch{};
          return true;
        },
        false);
  } catch (const TooMuch&) {
    bad("nested deeper than " + std::to_string(kFrameDepth) + " levels or more than " + std::to_string(max_values) +
        " values");
  }
  if (j.is_discarded() || !j.is_object()) bad("not a JSON object");
  const Json* v = json_at(j, {"v"});
  if (!v || !v->is_number_integer() || v->get<long long>() != kVersion) bad("not version " + std::to_string(kVersion));
  return j;
}

const Json& field(const Json& object, const char* name, Json::value_t type) {
  auto it = object.find(name);
  if (it == object.end() || it->type() != type) bad(std::string("\"") + name + "\" is missing or of the wrong type");
  return *it;
}

std::string string_field(const Json& object, const char* name) {
  return field(object, name, Json::value_t::string).get<std::string>();
}

Json encode_headers(const http::HttpHeaders& headers) {
  Json out = Json::array();
  for (const auto& [name, value] : headers) out.push_back(Json::array({name, value}));
  return out;
}

http::HttpHeaders decode_headers(const Json& object) {
  http::HttpHeaders out;
  for (const Json& h : field(object, "headers", Json::value_t::array)) {
    if (!h.is_array() || h.size() != 2 || !h[0].is_string() || !h[1].is_string()) bad("a header is not [name, value]");
    out.emplace_back(h[0].get<std::string>(), h[1].get<std::string>());
  }
  return out;
}

/// A request's headers, within kMaxHeaders and kMaxHeaderBytes.
http::HttpHeaders decode_request_headers(const Json& object) {
  http::HttpHeaders out = decode_headers(object);
  std::size_t bytes = 0;
  for (const auto& [name, value] : out) bytes += name.size() + value.size();
  if (out.size() > kMaxHeaders || bytes > kMaxHeaderBytes)
    bad("a request has more than " + std::to_string(kMaxHeaders) + " headers or " + std::to_string(kMaxHeaderBytes) +
        " bytes of them");
  return out;
}

/// The string field `name` of `object`, moved out of it.
std::string take_string(Json& object, const char* name) {
  field(object, name, Json::value_t::string);
  return std::move(object[name].get_ref<std::string&>());
}

std::string_view kind_name(Kind kind) {
  for (const auto& [k, name] : kKinds)
    if (k == kind) return name;
  return "closed";
}

Kind kind_of(const std::string& name) {
  for (const auto& [k, n] : kKinds)
    if (n == name) return k;
  bad("unknown error kind");
}

/// Waits until `fd` is ready for `events` or the deadline passes (TransportError(Timeout)).
void wait_ready(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw http::TransportError(Kind::Timeout, "the node agent did not answer in time");
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
    if (n > 0) return;
    if (n < 0 && errno != EINTR)
      throw http::TransportError(Kind::Closed, std::string("agent relay socket: ") + std::strerror(errno));
  }
}

void read_exact(int fd, char* out, std::size_t size, std::chrono::steady_clock::time_point deadline) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::recv(fd, out + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0)
      throw http::TransportError(Kind::Closed, "the node agent's relay closed the connection without an answer");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      throw http::TransportError(Kind::Closed, std::string("agent relay socket: ") + std::strerror(errno));
    wait_ready(fd, POLLIN, deadline);
  }
}

}  // namespace

std::string encode_request(const RelayRequest& request) {
  Json j = {{"v", kVersion}, {"server", request.server}, {"timeoutMs", request.timeout.count()}};
  Json list = Json::array();
  for (const http::HttpRequest& r : request.requests)
    list.push_back(
        {{"method", r.method}, {"target", r.target}, {"headers", encode_headers(r.headers)}, {"body", r.body}});
  j["requests"] = std::move(list);
  if (!request.pod_uid.empty()) j["podUid"] = request.pod_uid;
  return dump(j);
}

RelayRequest decode_request(const std::string& payload) {
  Json j = parse(payload, kMaxFrameValues);
  RelayRequest out;
  out.server = string_field(j, "server");
  const Json& timeout = field(j, "timeoutMs", Json::value_t::number_unsigned);
  if (timeout.get<unsigned long long>() < 1 || timeout.get<unsigned long long>() > kMaxTimeoutMs)
    bad("\"timeoutMs\" is outside 1 ms to 10 min");
  out.timeout = std::chrono::milliseconds(timeout.get<long long>());
  if (j.contains("podUid")) {
    out.pod_uid = string_field(j, "podUid");
    if (out.pod_uid.size() > kMaxPodUid) bad("\"podUid\" is longer than " + std::to_string(kMaxPodUid) + " bytes");
  }
  Json& list = j["requests"];
  if (!list.is_array()) bad("\"requests\" is missing or of the wrong type");
  if (list.empty() || list.size() > kMaxRequests)
    bad("it holds no requests or more than " + std::to_string(kMaxRequests));
  for (Json& r : list) {
    if (!r.is_object()) bad("a request is not an object");
    http::HttpRequest request{take_string(r, "method"), take_string(r, "target"), decode_request_headers(r),
                              take_string(r, "body")};
    if (request.target.size() > kMaxTargetBytes)
      bad("a request target is longer than " + std::to_string(kMaxTargetBytes) + " bytes");
    out.requests.push_back(std::move(request));
  }
  return out;
}

std::string encode_outcome(http::BatchOutcome&& outcome) {
  if (auto* r = std::get_if<http::HttpResponse>(&outcome))
    return dump({{"status", r->status}, {"headers", encode_headers(r->headers)}, {"body", std::move(r->body)}});
  const auto& e = std::get<http::TransportError>(outcome);
  return dump({{"error", std::string(kind_name(e.kind()))}, {"message", e.msg()}});
}

std::string encode_answer(const RelayAnswer& answer) {
  Json j = {{"v", kVersion}};
  if (!answer.refused.empty()) {
    j["refused"] = answer.refused;
    return dump(j);
  }
  std::string out = "{\"v\":" + std::to_string(kVersion) + ",\"outcomes\":[";
  for (const http::BatchOutcome& o : answer.outcomes) {
    if (out.back() != '[') out += ',';
    out += encode_outcome(http::BatchOutcome(o));
  }
  return out + "]}";
}

RelayAnswer decode_answer(const std::string& payload, std::size_t expected) {
  Json j = parse(payload, 0);
  RelayAnswer out;
  if (j.contains("refused")) {
    out.refused = string_field(j, "refused");
    if (out.refused.empty()) bad("an empty refusal");
    return out;
  }
  const Json& list = field(j, "outcomes", Json::value_t::array);
  if (list.size() != expected)
    bad(std::to_string(list.size()) + " outcomes for " + std::to_string(expected) + " requests");
  for (const Json& o : list) {
    if (!o.is_object()) bad("an outcome is not an object");
    if (o.contains("error")) {
      out.outcomes.emplace_back(http::TransportError(kind_of(string_field(o, "error")), string_field(o, "message")));
      continue;
    }
    const Json& status = field(o, "status", Json::value_t::number_unsigned);
    if (status.get<unsigned long long>() < 100 || status.get<unsigned long long>() > 999)
      bad("a status outside 100-999");
    out.outcomes.emplace_back(http::HttpResponse{status.get<int>(), decode_headers(o), string_field(o, "body")});
  }
  return out;
}

void write_frame(int fd, std::string_view payload, std::chrono::steady_clock::time_point deadline) {
  auto size = static_cast<std::uint32_t>(payload.size());
  const char prefix[4] = {static_cast<char>(size >> 24), static_cast<char>(size >> 16), static_cast<char>(size >> 8),
                          static_cast<char>(size)};
  // Prefix and payload sent apart: the payload (up to an answer's limit) is never copied.
  for (std::string_view part : {std::string_view(prefix, sizeof prefix), payload}) {
    std::size_t done = 0;
    while (done < part.size()) {
      ssize_t n = ::send(fd, part.data() + done, part.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        throw http::TransportError(Kind::Closed, std::string("agent relay socket: ") + std::strerror(errno));
      wait_ready(fd, POLLOUT, deadline);
    }
  }
}

std::string read_frame(int fd, std::size_t max_bytes, std::chrono::steady_clock::time_point deadline,
                       BudgetHold* hold) {
  unsigned char prefix[4];
  read_exact(fd, reinterpret_cast<char*>(prefix), sizeof prefix, deadline);
  std::size_t size = (std::size_t{prefix[0]} << 24) | (std::size_t{prefix[1]} << 16) | (std::size_t{prefix[2]} << 8) |
                     std::size_t{prefix[3]};
  if (size > max_bytes)
    throw http::TransportError(Kind::TooLarge, "agent relay frame of " + std::to_string(size) + " bytes (at most " +
                                                   std::to_string(max_bytes) + ")");
  // Never sized from the announced length: a peer that announces much and sends little costs little.
  std::string payload;
  while (payload.size() < size) {
    std::size_t chunk = std::min(kReadChunk, size - payload.size());
    if (hold && !hold->grow(chunk))
      throw http::TransportError(Kind::TooLarge, "the relay is busy: its memory for frames in progress is spent");
    std::size_t done = payload.size();
    payload.resize(done + chunk);
    read_exact(fd, payload.data() + done, chunk, deadline);
  }
  return payload;
}

bool ByteBudget::take(std::size_t n) {
  std::size_t used = used_.load();
  do {
    if (n > limit_ || used > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(used, used + n));
  return true;
}

bool BudgetHold::grow(std::size_t n) {
  if (budget_ && !budget_->take(n)) return false;
  held_ += n;
  return true;
}

}  // namespace manifold::relay
