// Implementation of the unary gRPC call: a blocking connect bounded by the deadline, then a poll
// loop feeding the socket's bytes to an nghttp2 client session and its output to the socket until
// the request's stream closes, and the checks of the answer.
#include "kubelet/grpc_call.h"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "util/quote.h"
#include "util/unique_fd.h"

namespace manifold::kubelet {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kPrefix = 5;
constexpr std::size_t kMaxHeaderText = 256;

/// What the nghttp2 callbacks see of the one call.
struct CallState {
  std::string framed_request;
  std::size_t sent = 0;
  int32_t stream_id = -1;
  std::size_t max_body = 0;
  std::string body;
  bool too_large = false;
  bool closed = false;
  uint32_t close_error = 0;
  std::string status, content_type, grpc_status, grpc_message;
};

struct SessionDelete {
  void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
};
struct CallbacksDelete {
  void operator()(nghttp2_session_callbacks* c) const { nghttp2_session_callbacks_del(c); }
};
using SessionPtr = std::unique_ptr<nghttp2_session, SessionDelete>;
using CallbacksPtr = std::unique_ptr<nghttp2_session_callbacks, CallbacksDelete>;

CallState& state_of(void* user) { return *static_cast<CallState*>(user); }

int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen, const uint8_t* value,
              size_t valuelen, uint8_t, void* user) {
  CallState& st = state_of(user);
  if (frame->hd.stream_id != st.stream_id) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string v(reinterpret_cast<const char*>(value), std::min(valuelen, kMaxHeaderText));
  if (n == ":status") st.status = v;
  if (n == "content-type") st.content_type = v;
  if (n == "grpc-status") st.grpc_status = v;
  if (n == "grpc-message") st.grpc_message = v;
  return 0;
}

int on_data(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len, void* user) {
  CallState& st = state_of(user);
  if (stream_id != st.stream_id) return 0;
  if (st.body.size() + len > st.max_body) {
    st.too_large = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  st.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int on_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  CallState& st = state_of(user);
  if (stream_id != st.stream_id) return 0;
  st.closed = true;
  st.close_error = error_code;
  return 0;
}

ssize_t read_request(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags, nghttp2_data_source*,
                     void* user) {
  CallState& st = state_of(user);
  std::size_t n = std::min(length, st.framed_request.size() - st.sent);
  std::memcpy(buf, st.framed_request.data() + st.sent, n);
  st.sent += n;
  if (st.sent == st.framed_request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

/// The bounded call: what went wrong is prefixed by the method and socket.
class Call {
 public:
  Call(const std::string& socket_path, const std::string& method, const GrpcCallOptions& options)
      : socket_(socket_path), method_(method), deadline_(Clock::now() + options.timeout) {}

  [[noreturn]] void fail(GrpcFailure f, const std::string& why) const {
    throw GrpcError(f, "gRPC " + method_ + " on " + socket_ + ": " + why);
  }

  milliseconds left() const {
    auto l = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
    if (l <= milliseconds(0)) fail(GrpcFailure::Timeout, "no complete answer within the deadline");
    return l;
  }

  util::UniqueFd connect_socket() const;
  SessionPtr open_session(CallState& st) const;
  void submit(nghttp2_session* s, CallState& st) const;
  void run(int fd, nghttp2_session* s, CallState& st) const;
  std::string answer(const CallState& st, std::size_t max_message) const;

 private:
  std::string socket_, method_;
  Clock::time_point deadline_;
};

util::UniqueFd Call::connect_socket() const {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.empty() || socket_.size() >= sizeof(addr.sun_path)) fail(GrpcFailure::Transport, "invalid socket path");
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  util::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) fail(GrpcFailure::Transport, std::string("socket: ") + std::strerror(errno));
  // A unix connect blocks only while the listener's backlog is full; SO_SNDTIMEO bounds that wait.
  auto l = left();
  timeval tv{static_cast<time_t>(l.count() / 1000), static_cast<suseconds_t>((l.count() % 1000) * 1000)};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    if (e == ENOENT || e == ECONNREFUSED) fail(GrpcFailure::Unreachable, std::strerror(e));
    if (e == EAGAIN || e == EINPROGRESS) fail(GrpcFailure::Timeout, "connect did not complete within the deadline");
    fail(GrpcFailure::Transport, std::string("connect: ") + std::strerror(e));
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    fail(GrpcFailure::Transport, std::string("fcntl: ") + std::strerror(errno));
  return fd;
}

SessionPtr Call::open_session(CallState& st) const {
  nghttp2_session_callbacks* raw_callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&raw_callbacks) != 0) fail(GrpcFailure::Transport, "out of memory");
  CallbacksPtr callbacks(raw_callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks.get(), on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks.get(), on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks.get(), on_close);
  nghttp2_session* raw = nullptr;
  if (nghttp2_session_client_new(&raw, callbacks.get(), &st) != 0) fail(GrpcFailure::Transport, "out of memory");
  return SessionPtr(raw);
}

void Call::submit(nghttp2_session* s, CallState& st) const {
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 20}};
  if (nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, settings, std::size(settings)) != 0)
    fail(GrpcFailure::Transport, "cannot queue the HTTP/2 settings");
  const std::string timeout = std::to_string(std::min<long long>(left().count(), 99999999)) + "m";
  const std::string agent = std::string("manifold/") + MANIFOLD_VERSION;
  auto nv = [](std::string_view n, std::string_view v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                      NGHTTP2_NV_FLAG_NONE};
  };
  const nghttp2_nv headers[] = {nv(":method", "POST"),
                                nv(":scheme", "http"),
                                nv(":authority", "localhost"),
                                nv(":path", method_),
                                nv("content-type", "application/grpc"),
                                nv("te", "trailers"),
                                nv("grpc-timeout", timeout),
                                nv("user-agent", agent)};
  nghttp2_data_provider body{};
  body.read_callback = read_request;
  st.stream_id = nghttp2_submit_request(s, nullptr, headers, std::size(headers), &body, nullptr);
  if (st.stream_id < 0)
    fail(GrpcFailure::Transport, std::string("cannot queue the request: ") + nghttp2_strerror(st.stream_id));
}

void Call::run(int fd, nghttp2_session* s, CallState& st) const {
  std::string out;
  char buf[16384];
  while (!st.closed) {
    for (;;) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(s, &data);
      if (n < 0) fail(GrpcFailure::Transport, nghttp2_strerror(static_cast<int>(n)));
      if (n == 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (!out.empty()) {
      ssize_t w = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN && errno != EINTR)
        fail(GrpcFailure::Transport, std::string("send: ") + std::strerror(errno));
      if (w > 0) out.erase(0, static_cast<std::size_t>(w));
    }
    if (out.empty() && !nghttp2_session_want_read(s) && !nghttp2_session_want_write(s))
      fail(GrpcFailure::Transport, "the server ended the HTTP/2 session before answering");
    pollfd p{fd, static_cast<short>(POLLIN | (out.empty() ? 0 : POLLOUT)), 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left().count(), 1 << 30)));
    if (r < 0 && errno != EINTR) fail(GrpcFailure::Transport, std::string("poll: ") + std::strerror(errno));
    if (r <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) fail(GrpcFailure::Transport, "the server closed the connection before answering");
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      fail(GrpcFailure::Transport, std::string("recv: ") + std::strerror(errno));
    }
    ssize_t used = nghttp2_session_mem_recv(s, reinterpret_cast<const uint8_t*>(buf), static_cast<std::size_t>(n));
    if (st.too_large)
      fail(GrpcFailure::TooLarge, "the answer is larger than " + std::to_string(st.max_body - kPrefix) + " bytes");
    if (used < 0) fail(GrpcFailure::Transport, std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(used)));
  }
}

std::string Call::answer(const CallState& st, std::size_t max_message) const {
  if (st.close_error != 0 && st.grpc_status.empty())
    fail(GrpcFailure::Transport, "the server reset the stream (HTTP/2 error " + std::to_string(st.close_error) + ")");
  if (st.status != "200") fail(GrpcFailure::Protocol, "HTTP status " + util::quote_bytes(st.status, 16) + ", not 200");
  if (st.grpc_status.empty()) fail(GrpcFailure::Protocol, "the answer has no grpc-status");
  if (st.grpc_status != "0")
    fail(GrpcFailure::Status,
         "status " + util::quote_bytes(st.grpc_status, 8) + ": " + util::quote_bytes(st.grpc_message, 200));
  if (st.content_type.rfind("application/grpc", 0) != 0)
    fail(GrpcFailure::Protocol, "content type " + util::quote_bytes(st.content_type, 64) + " is not application/grpc");
  try {
    return grpc_unframe(st.body, max_message);
  } catch (const GrpcError& e) {
    fail(e.failure(), e.what());
  }
}

}  // namespace

std::string grpc_frame(std::string_view message) {
  std::string out(kPrefix, '\0');
  const auto n = static_cast<uint32_t>(message.size());
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(1 + i)] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  out.append(message);
  return out;
}

std::string grpc_unframe(std::string_view body, std::size_t max_message) {
  if (body.size() < kPrefix) throw GrpcError(GrpcFailure::Protocol, "the answer holds no complete message");
  if (body[0] != 0) throw GrpcError(GrpcFailure::Protocol, "the answer message is compressed (none was negotiated)");
  uint64_t n = 0;
  for (std::size_t i = 1; i < kPrefix; ++i) n = (n << 8) | static_cast<unsigned char>(body[i]);
  if (n > max_message)
    throw GrpcError(GrpcFailure::TooLarge,
                    "the answer message is larger than " + std::to_string(max_message) + " bytes");
  if (body.size() - kPrefix != n)
    throw GrpcError(GrpcFailure::Protocol, "the answer is not exactly one message (" +
                                               std::to_string(body.size() - kPrefix) +
                                               " bytes after a prefix announcing " + std::to_string(n) + ")");
  return std::string(body.substr(kPrefix));
}

std::string grpc_unary_call(const std::string& socket_path, const std::string& method, std::string_view request,
                            const GrpcCallOptions& options) {
  Call call(socket_path, method, options);
  CallState st;
  st.framed_request = grpc_frame(request);
  st.max_body = options.max_message + kPrefix;
  util::UniqueFd fd = call.connect_socket();
  SessionPtr session = call.open_session(st);
  call.submit(session.get(), st);
  call.run(fd.get(), session.get(), st);
  return call.answer(st, options.max_message);
}

}  // namespace manifold::kubelet
