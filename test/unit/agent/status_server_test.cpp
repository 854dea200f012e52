// Tests for lib/agent/status_server: a real server on an ephemeral loopback port, spoken to over
// real sockets by a tiny blocking HTTP client — /metrics, /healthz, /readyz, 404, 405 and malformed
// requests, idle clients that must neither block other clients nor stop(), address validation
// (loopback only unless allowed) and a bind conflict. Timing is judged only where it is the
// contract: a probe with the kubelet's 1 s timeout is answered while 120 idle clients hold
// connections, and a client that sends nothing is dropped well before that (otherwise the client's
// socket timeout only keeps a broken server from hanging).
#include "agent/status_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <mutex>
#include <vector>

#include "cni_error_of.h"
#include "util/unique_fd.h"

using manifold::agent::MetricsRegistry;
using manifold::agent::StatusServer;
using manifold::test::code_of;
using manifold::util::UniqueFd;
namespace cni = manifold::cni;

namespace {

/// A connected socket to 127.0.0.1:port (or [::1]:port), with a receive timeout (20 s by default).
UniqueFd connect_to(std::uint16_t port, bool v6 = false, timeval timeout = {20, 0}) {
  UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd.get() >= 0);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_storage storage{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&storage), len) == 0);
  return fd;
}

/// What the server answered: status (0 when nothing came), lower-cased header block, body.
struct Reply {
  int status = 0;
  std::string headers;
  std::string body;
  bool has_header(const std::string& line) const { return headers.find("\r\n" + line + "\r\n") != std::string::npos; }
};

/// Sends `request` and reads until the server closes the connection (or `timeout` passes without
/// a byte: status 0).
Reply http_exchange(std::uint16_t port, const std::string& request, bool v6 = false, timeval timeout = {20, 0}) {
  UniqueFd fd = connect_to(port, v6, timeout);
  for (std::size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0;) raw.append(buf, static_cast<std::size_t>(n));
  Reply reply;
  std::size_t end = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || end == std::string::npos) return reply;
  reply.status = std::stoi(raw.substr(9, 3));
  reply.headers = raw.substr(raw.find("\r\n"), end - raw.find("\r\n") + 2);
  std::transform(reply.headers.begin(), reply.headers.end(), reply.headers.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  reply.body = raw.substr(end + 4);
  return reply;
}

Reply request(std::uint16_t port, const std::string& method, const std::string& target) {
  return http_exchange(port, method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

/// A health callback the test can flip.
struct HealthSwitch {
  std::mutex mu;
  StatusServer::Health state;
  StatusServer::Health get() {
    std::lock_guard lock(mu);
    return state;
  }
  void set(StatusServer::Health h) {
    std::lock_guard lock(mu);
    state = std::move(h);
  }
};

}  // namespace

TEST_CASE("StatusServer serves the registry on GET /metrics", "[agent]") {
  MetricsRegistry registry;
  registry.counter("things_total", "Things.", {{"kind", "a"}}).inc(3);
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{});
  REQUIRE(server.port() != 0);
  Reply reply = request(server.port(), "GET", "/metrics");
  CHECK(reply.status == 200);
  CHECK(reply.body == registry.render());
  CHECK(reply.body == "# HELP things_total Things.\n# TYPE things_total counter\nthings_total{kind=\"a\"} 3\n");
  CHECK(reply.has_header("content-type: text/plain; version=0.0.4; charset=utf-8"));
  CHECK(reply.has_header("content-length: " + std::to_string(reply.body.size())));
  CHECK(reply.has_header("connection: close"));

  registry.counter("things_total", "Things.", {{"kind", "a"}}).inc();
  CHECK_THAT(request(server.port(), "GET", "/metrics?x=1").body, Catch::Contains("things_total{kind=\"a\"} 4\n"));

  Reply head = request(server.port(), "HEAD", "/metrics");
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  CHECK(head.has_header("content-length: " + std::to_string(registry.render().size())));
}

TEST_CASE("StatusServer answers /healthz from liveness and /readyz from readiness, without reasons", "[agent]") {
  MetricsRegistry registry;
  HealthSwitch live, ready;
  StatusServer server("127.0.0.1:0", registry,
                      StatusServer::Probes{[&live] { return live.get(); }, [&ready] { return ready.get(); }});
  Reply ok = request(server.port(), "GET", "/healthz");
  CHECK(ok.status == 200);
  CHECK(ok.body == "ok\n");
  CHECK(ok.has_header("content-type: text/plain; charset=utf-8"));
  CHECK(request(server.port(), "GET", "/readyz").status == 200);

  // The API server is away: not ready, but alive; the reason stays in the agent's log.
  ready.set({false, "cannot list pods: connection refused to 10.96.0.1:443"});
  Reply alive = request(server.port(), "GET", "/healthz");
  CHECK(alive.status == 200);
  Reply not_ready = request(server.port(), "GET", "/readyz");
  CHECK(not_ready.status == 503);
  CHECK(not_ready.body == "not ready\n");

  live.set({false, "the agent's loop has not run for 700 s"});
  Reply down = request(server.port(), "GET", "/healthz");
  CHECK(down.status == 503);
  CHECK(down.body == "unhealthy\n");

  live.set({true, ""});
  ready.set({true, ""});
  CHECK(request(server.port(), "GET", "/healthz").status == 200);
  CHECK(request(server.port(), "HEAD", "/readyz").status == 200);
  CHECK(request(server.port(), "POST", "/readyz").status == 405);
}

TEST_CASE("StatusServer reports a throwing probe callback as unhealthy, without its message", "[agent]") {
  MetricsRegistry registry;
  auto boom = []() -> StatusServer::Health { throw std::runtime_error("boom"); };
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{boom, boom});
  Reply reply = request(server.port(), "GET", "/healthz");
  CHECK(reply.status == 503);
  CHECK(reply.body == "unhealthy\n");
  CHECK(request(server.port(), "GET", "/readyz").body == "not ready\n");
}

TEST_CASE("StatusServer answers every 1 s probe while 120 idle clients hold connections", "[agent]") {
  MetricsRegistry registry;
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{});
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 120; ++i) idle.push_back(connect_to(server.port()));
  int answered = 0;
  for (int i = 0; i < 15; ++i) {
    idle.push_back(connect_to(server.port()));  // more keep coming between the probes
    Reply probe = http_exchange(server.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", false, {1, 0});
    if (probe.status == 200) ++answered;
  }
  CHECK(answered == 15);
}

TEST_CASE("StatusServer closes the oldest connection for a newcomer at the cap", "[agent]") {
  MetricsRegistry registry;
  StatusServer::Limits limits;
  limits.max_connections = 4;
  limits.read_deadline = std::chrono::seconds(30);  // only the cap can close them here
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{}, false, limits);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_to(server.port()));
  CHECK(request(server.port(), "GET", "/healthz").status == 200);
  char byte;
  CHECK(::recv(idle[0].get(), &byte, 1, 0) == 0);  // the oldest made room
  idle.push_back(connect_to(server.port()));       // the cap is reached again
  CHECK(request(server.port(), "GET", "/healthz").status == 200);
  CHECK(::recv(idle[1].get(), &byte, 1, 0) == 0);
}

TEST_CASE("StatusServer drops a client that does not send its request within the read deadline", "[agent]") {
  MetricsRegistry registry;
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{});
  UniqueFd slow = connect_to(server.port(), false, {5, 0});
  CHECK(::send(slow.get(), "GET /hea", 8, MSG_NOSIGNAL) == 8);
  const auto start = std::chrono::steady_clock::now();
  char byte;
  CHECK(::recv(slow.get(), &byte, 1, 0) == 0);
  // Well before a probe's 1 s timeout would pass (the default read deadline is 400 ms).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(900));
}

TEST_CASE("StatusServer answers 404, 405 and 400 for what it does not serve", "[agent]") {
  MetricsRegistry registry;
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{});
  CHECK(request(server.port(), "GET", "/").status == 404);
  CHECK(request(server.port(), "GET", "/metricsx").status == 404);
  CHECK(request(server.port(), "DELETE", "/nothing").status == 404);
  Reply post = request(server.port(), "POST", "/metrics");
  CHECK(post.status == 405);
  CHECK(post.has_header("allow: get, head"));
  CHECK(http_exchange(server.port(), "PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello").status ==
        405);
  CHECK(http_exchange(server.port(), "hello\r\n\r\n").status == 400);
  CHECK(http_exchange(server.port(), "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n").status ==
        431);
  CHECK(http_exchange(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n").status == 413);
  CHECK(request(server.port(), "GET", "/metrics").status == 200);
}

TEST_CASE("StatusServer serves others while clients sit idle, and stops with them connected", "[agent]") {
  MetricsRegistry registry;
  auto server = std::make_unique<StatusServer>("127.0.0.1:0", registry, StatusServer::Probes{});
  UniqueFd idle = connect_to(server->port());
  UniqueFd partial = connect_to(server->port());
  CHECK(::send(partial.get(), "GET /metr", 9, MSG_NOSIGNAL) == 9);
  CHECK(request(server->port(), "GET", "/healthz").status == 200);
  CHECK(request(server->port(), "GET", "/metrics").status == 200);

  std::vector<UniqueFd> more;
  for (int i = 0; i < 20; ++i) more.push_back(connect_to(server->port()));  // past the connection cap
  server->stop();
  // stop() closed the connections: the idle clients read the end of the stream.
  char byte;
  CHECK(::recv(idle.get(), &byte, 1, 0) == 0);
  CHECK(::recv(partial.get(), &byte, 1, 0) == 0);
  server->stop();  // idempotent
  server.reset();
}

TEST_CASE("StatusServer stop() is idempotent and frees the port", "[agent]") {
  MetricsRegistry registry;
  StatusServer server("127.0.0.1:0", registry, StatusServer::Probes{});
  std::uint16_t port = server.port();
  server.stop();
  server.stop();
  CHECK(server.port() == port);
  StatusServer again("127.0.0.1:" + std::to_string(port), registry, StatusServer::Probes{});
  CHECK(request(again.port(), "GET", "/healthz").status == 200);
}

TEST_CASE("StatusServer refuses unparsable and non-loopback addresses", "[agent]") {
  MetricsRegistry registry;
  auto start = [&registry](const std::string& address, bool allow = false) {
    return code_of([&] { StatusServer s(address, registry, StatusServer::Probes{}, allow); });
  };
  const unsigned invalid = static_cast<unsigned>(cni::ErrorCode::InvalidConfig);
  for (const char* address :
       {"", "localhost:9555", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x", "127.0.0.1:-1",
        "127.0.0.1:80 ", ":9555", "::1:9555", "[::1]", "[::1]9555", "[127.0.0.1]:0", "[]:0", "[::1:0"}) {
    CAPTURE(address);
    CHECK(start(address) == invalid);
  }
  for (const char* address : {"0.0.0.0:0", "10.1.2.3:9555", "[::]:0", "[::ffff:10.0.0.1]:0", "[2001:db8::1]:0"}) {
    CAPTURE(address);
    std::string msg;
    CHECK(code_of([&] { StatusServer s(address, registry, StatusServer::Probes{}); }, &msg) == invalid);
    CHECK_THAT(msg, Catch::Contains("is not a loopback address"));
  }
  CHECK(start("127.0.0.2:0") == 0);
  CHECK(start("0.0.0.0:0", true) == 0);
}

TEST_CASE("StatusServer reports a port in use clearly", "[agent]") {
  MetricsRegistry registry;
  StatusServer first("127.0.0.1:0", registry, StatusServer::Probes{});
  std::string address = "127.0.0.1:" + std::to_string(first.port());
  std::string msg;
  CHECK(code_of([&] { StatusServer second(address, registry, StatusServer::Probes{}); }, &msg) ==
        static_cast<unsigned>(cni::ErrorCode::Internal));
  CHECK(msg == "status server: cannot listen on " + address + ": Address already in use");
  CHECK(request(first.port(), "GET", "/healthz").status == 200);  // no callback: healthy
}

TEST_CASE("StatusServer listens on the IPv6 loopback", "[agent]") {
  MetricsRegistry registry;
  UniqueFd probe(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in6 any{};
  any.sin6_family = AF_INET6;
  any.sin6_addr = in6addr_loopback;
  if (probe.get() < 0 || ::bind(probe.get(), reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) {
    WARN("no IPv6 loopback here; skipped");
    return;
  }
  StatusServer server("[::1]:0", registry, StatusServer::Probes{});
  CHECK(http_exchange(server.port(), "GET /healthz HTTP/1.1\r\nHost: [::1]\r\n\r\n", true).status == 200);
}
