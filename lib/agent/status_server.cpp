// StatusServer implementation on Boost.Beast/Asio. One io_context, run by the server's own thread,
// drives the acceptor and every connection asynchronously, so an idle or slow client costs a socket
// and never a thread. A connection serves one request: it is read whole (header and body bounded)
// under a short read deadline (beast::tcp_stream's expiry closes the socket when it passes), then
// answered with "Connection: close" under an answer deadline, shut down for sending, and closed once
// the client has closed its side too (or the deadline passed). The acceptor never stops: when
// limits.max_connections are open, the oldest is closed for the newcomer, so a probe (which sends
// its request at once and is answered within one turn of the loop) always gets in, however many
// idle connections others open. stop() stops the event loop, joins the thread and destroys the
// loop, whose pending handlers own the connections, so every socket is closed when it returns.
#include "agent/status_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <list>
#include <mutex>
#include <thread>

#include "cni/error.h"
#include "util/log.h"

namespace manifold::agent {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Response = beast::http::response<beast::http::string_body>;

constexpr std::size_t kHeaderLimit = 8 * 1024;
constexpr std::size_t kBodyLimit = 8 * 1024;
constexpr std::chrono::milliseconds kAcceptRetry(100);
constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kTextType = "text/plain; charset=utf-8";

[[noreturn]] void bad_address(const std::string& address, const std::string& why) {
  throw cni::CniError(cni::ErrorCode::InvalidConfig, "status server address \"" + address + "\" " + why);
}

bool is_loopback(const asio::ip::address& ip) {
  if (ip.is_v6() && ip.to_v6().is_v4_mapped())
    return asio::ip::make_address_v4(asio::ip::v4_mapped, ip.to_v6()).is_loopback();
  return ip.is_loopback();
}

/// "a.b.c.d:port" or "[v6]:port" as an endpoint; throws CniError(InvalidConfig).
tcp::endpoint parse_endpoint(const std::string& address, bool allow_non_loopback) {
  std::string host, port_text;
  bool bracketed = !address.empty() && address[0] == '[';
  std::size_t colon = bracketed ? address.find("]:") + 1 : address.rfind(':');
  if (colon == std::string::npos || colon == 0 || (bracketed && colon == 1))
    bad_address(address, "is not of the form ip:port or [ipv6]:port");
  host = bracketed ? address.substr(1, colon - 2) : address.substr(0, colon);
  port_text = address.substr(colon + 1);
  unsigned port = 0;
  auto [end, err] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || err != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    bad_address(address, "has no valid port number");
  beast::error_code ec;
  asio::ip::address ip = asio::ip::make_address(host, ec);
  if (ec || ip.is_v6() != bracketed)
    bad_address(address, bracketed || host.find(':') == std::string::npos ? "does not start with an IP address"
                                                                          : "has an IPv6 address without brackets");
  if (!allow_non_loopback && !is_loopback(ip)) bad_address(address, "is not a loopback address");
  return {ip, static_cast<std::uint16_t>(port)};
}

Response make_response(beast::http::status status, std::string body, const char* type, bool head) {
  Response res{status, 11};
  res.set(beast::http::field::content_type, type);
  res.keep_alive(false);
  res.content_length(body.size());
  if (!head) res.body() = std::move(body);
  return res;
}

/// The event loop and everything registered with it, destroyed together by stop().
struct Loop {
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer retry{ioc};
};

class Session;

/// The server's state; StatusServer::Impl is this.
struct Core {
  const MetricsRegistry& metrics;
  StatusProbes probes;
  StatusLimits limits;
  std::list<Session*> open;  // open connections, oldest first; server thread only; outlives `loop`
  std::unique_ptr<Loop> loop = std::make_unique<Loop>();
  std::uint16_t port = 0;
  std::thread thread;
  std::mutex stop_mu;

  Core(const MetricsRegistry& m, StatusProbes p, StatusLimits l) : metrics(m), probes(std::move(p)), limits(l) {}
  void accept();
  void run();
  Response answer(const beast::http::request<beast::http::string_body>& req);
};

/// One connection: read one request, write its answer, close. Listed in Core::open from start()
/// until it is done, evicted or destroyed.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Core& server) : stream_(std::move(socket)), server_(server) {
    parser_.header_limit(kHeaderLimit);
    parser_.body_limit(kBodyLimit);
  }
  ~Session() { unlist(); }

  void start() {
    position_ = server_.open.insert(server_.open.end(), this);
    listed_ = true;
    stream_.expires_after(server_.limits.read_deadline);
    beast::http::async_read(stream_, buffer_, parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  /// Closes the connection to make room (its pending operation then ends with an error).
  void evict() {
    unlist();
    stream_.close();
  }

 private:
  void unlist() {
    if (!listed_) return;
    listed_ = false;
    server_.open.erase(position_);
  }

  void on_read(beast::error_code ec) {
    stream_.expires_after(server_.limits.answer_deadline);
    if (!ec) return respond(server_.answer(parser_.get()));
    bool protocol_error = ec.category() == beast::http::make_error_code(beast::http::error::bad_target).category() &&
                          ec != beast::http::error::end_of_stream && ec != beast::http::error::partial_message;
    if (!protocol_error) return done();  // timeout, reset, or the client went away
    if (ec == beast::http::error::body_limit)
      return respond(
          make_response(beast::http::status::payload_too_large, "request body too large\n", kTextType, false));
    if (ec == beast::http::error::header_limit)
      return respond(make_response(beast::http::status::request_header_fields_too_large, "request header too large\n",
                                   kTextType, false));
    respond(make_response(beast::http::status::bad_request, "bad request: " + ec.message() + "\n", kTextType, false));
  }

  void respond(Response res) {
    response_ = std::move(res);
    beast::http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      self->drain();
    });
  }

  // Reads whatever the client still sends until it closes (or the deadline passes), so that closing
  // with unread data does not reset the connection and destroy the answer before the client read it.
  void drain() {
    stream_.async_read_some(asio::buffer(drain_buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->done();
                              self->drain();
                            });
  }

  void done() { unlist(); }

  beast::tcp_stream stream_;
  Core& server_;
  std::list<Session*>::iterator position_;
  bool listed_ = false;
  beast::flat_buffer buffer_{kHeaderLimit + kBodyLimit};
  beast::http::request_parser<beast::http::string_body> parser_;
  Response response_;
  char drain_buffer_[512];
};

void Core::accept() {
  loop->acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {  // e.g. out of file descriptors: try again shortly rather than spin
      util::log_warning("status server: cannot accept a connection: ", ec.message());
      loop->retry.expires_after(kAcceptRetry);
      loop->retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) accept();
      });
      return;
    }
    while (!open.empty() && open.size() >= std::max<std::size_t>(limits.max_connections, 1)) open.front()->evict();
    std::make_shared<Session>(std::move(socket), *this)->start();
    accept();
  });
}

void Core::run() {
  for (;;) {
    try {
      loop->ioc.run();
      return;
    } catch (const std::exception& e) {
      util::log_error("status server: ", e.what());
    }
  }
}

Response Core::answer(const beast::http::request<beast::http::string_body>& req) {
  std::string_view path = req.target();
  path = path.substr(0, path.find('?'));
  if (path != "/metrics" && path != "/healthz" && path != "/readyz")
    return make_response(beast::http::status::not_found, "not found\n", kTextType, false);
  bool head = req.method() == beast::http::verb::head;
  if (!head && req.method() != beast::http::verb::get) {
    Response res = make_response(beast::http::status::method_not_allowed, "method not allowed\n", kTextType, false);
    res.set(beast::http::field::allow, "GET, HEAD");
    return res;
  }
  if (path == "/metrics") {
    try {
      return make_response(beast::http::status::ok, metrics.render(), kMetricsType, head);
    } catch (const std::exception& e) {
      return make_response(beast::http::status::internal_server_error, std::string(e.what()) + "\n", kTextType, head);
    }
  }
  const bool live = path == "/healthz";
  const std::function<ProbeHealth()>& probe = live ? probes.live : probes.ready;
  ProbeHealth h;
  try {
    if (probe) h = probe();
  } catch (const std::exception& e) {
    h = ProbeHealth{false, std::string("the probe failed: ") + e.what()};
  }
  if (h.ok) return make_response(beast::http::status::ok, "ok\n", kTextType, head);
  // The reason goes to the log only: anyone on the node can read the answer.
  util::log_verbose("status server: ", path, " is 503: ", h.reason.empty() ? "no reason given" : h.reason);
  return make_response(beast::http::status::service_unavailable, live ? "unhealthy\n" : "not ready\n", kTextType, head);
}

}  // namespace

struct StatusServer::Impl : Core {
  using Core::Core;
};

StatusServer::StatusServer(const std::string& address, const MetricsRegistry& metrics, Probes probes,
                           bool allow_non_loopback, Limits limits)
    : impl_(std::make_unique<Impl>(metrics, std::move(probes), limits)) {
  tcp::endpoint endpoint = parse_endpoint(address, allow_non_loopback);
  tcp::acceptor& acceptor = impl_->loop->acceptor;
  beast::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);  // still refuses a port in use
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw cni::CniError(cni::ErrorCode::Internal, "status server: cannot listen on " + address + ": " + ec.message());
  impl_->port = acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

StatusServer::~StatusServer() { stop(); }

std::uint16_t StatusServer::port() const { return impl_->port; }

void StatusServer::stop() {
  std::lock_guard lock(impl_->stop_mu);
  if (!impl_->loop) return;
  impl_->loop->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->loop.reset();  // closes the acceptor and, with the pending handlers, every connection
}

}  // namespace manifold::agent
