// Tests for the node agent's API relay: the allowlist (relay_policy), the frames (relay/relay_protocol)
// and a real RelayServer on a Unix socket in a temporary directory spoken to by the real
// RelayTransport, with scripted upstream and direct transports (FakeHttpTransport) standing in for
// the API server. Covered: a relayed batch carries the agent's credentials and never the caller's,
// every reason to go direct (no socket, refusals: another API server, a call outside the allowlist, a
// peer uid not allowed, busy, unusable credentials), an answer lost after the request was handed over
// (each request fails retryably and later batches go direct), upstream failures passed through, and
// the socket file's life (a stale one replaced, a foreign file or a live server refused, removed on
// stop). No root is needed: the allowed uid is the test's own.
#include "relay/relay_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "forward_transport.h"
#include "cni_error_of.h"
#include "log_capture.h"
#include "relay/relay_policy.h"
#include "relay/relay_protocol.h"
#include "relay/relay_transport.h"
#include "temp_dir.h"
#include "util/unique_fd.h"

using manifold::http::BatchOutcome;
using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::HttpResponse;
using manifold::http::HttpTransport;
using manifold::http::TransportError;
using manifold::relay::relay_headers;
using manifold::relay::relay_refusal;
using manifold::relay::RelayCounters;
using manifold::relay::RelayServer;
using manifold::relay::RelayServerOptions;
using manifold::relay::RelayTransport;
using manifold::test::code_of;
using manifold::test::LogCapture;
using manifold::test::TempDir;
using manifold::util::UniqueFd;
namespace relay = manifold::relay;
namespace cni = manifold::cni;
using namespace std::chrono_literals;

namespace {

constexpr const char* kServer = "https://10.0.0.1:6443";
const std::string kPod = "/api/v1/namespaces/default/pods/web-0";
const std::string kNad = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions/data";

HttpRequest get(const std::string& target) {
  return {"GET", target, {{"Authorization", "Bearer caller-token"}, {"Accept", "application/json"}}, ""};
}

std::string header(const HttpRequest& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "<none>";
}

/// The relay's exchanges, counted.
struct Counts final : RelayCounters {
  std::atomic<int> answered_n{0};
  std::atomic<int> refused_n{0};
  void answered() override { ++answered_n; }
  void refused() override { ++refused_n; }
};

/// Serves every exchange (the node rule has tests of its own: relay_scope_test.cpp).
struct AllowAll final : relay::RelayScope {
  std::string authorize(const std::vector<HttpRequest>&, HttpTransport&, const std::string&, std::chrono::milliseconds,
                        bool& check_answers) override {
    check_answers = false;
    return "";
  }
  std::string check_answer(const HttpRequest&, const BatchOutcome&) override { return ""; }
};

/// A relay in a temporary directory with a scripted upstream, and a client with a scripted direct path.
struct Fixture {
  TempDir dir;
  std::string socket = dir.str() + "/run/agent.sock";
  Counts metrics;
  FakeHttpTransport upstream;
  FakeHttpTransport direct;
  int direct_opened = 0;
  int upstream_opened = 0;
  std::string token = "agent-token";
  std::optional<RelayServer> server;

  void start(RelayServerOptions options = {}) {
    options.socket_path = socket;
    if (options.server.empty()) options.server = kServer;
    if (options.allowed_uid == 0) options.allowed_uid = ::getuid();
    if (!options.scope && options.node_name.empty()) options.scope = std::make_shared<AllowAll>();
    server.emplace(
        options,
        [this] {
          ++upstream_opened;
          return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<FakeHttpTransport>>(upstream));
        },
        [this] {
          if (token == "unreadable") throw cni::CniError(cni::ErrorCode::InvalidConfig, "token file unreadable");
          return token.empty() ? token : "Bearer " + token;
        },
        metrics);
  }

  RelayTransport client(const std::string& server_url = kServer) {
    return RelayTransport(
        socket, server_url,
        [this] {
          ++direct_opened;
          return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<FakeHttpTransport>>(direct));
        },
        std::make_shared<relay::OwnerTrust>(::getuid()));
  }
};

}  // namespace

TEST_CASE("relay policy: the plugin's own calls pass, everything else is refused", "[relay]") {
  for (const HttpRequest& ok : std::vector<HttpRequest>{
           {"GET", kPod, {}, ""},
           {"PUT", kPod + "/status", {}, "{}"},
           {"POST", "/api/v1/namespaces/default/events", {}, "{}"},
           {"GET", kNad, {}, ""},
           {"GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/claim.a", {}, ""},
           {"GET",
            "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dn1%2Cspec.driver%3Dd.io",
            {},
            ""},
       })
    CHECK(relay_refusal(ok, "") == "");
  CHECK(relay_refusal({"GET", "/prefix" + kPod, {}, ""}, "/prefix") == "");
  for (const HttpRequest& bad : std::vector<HttpRequest>{
           {"DELETE", kPod, {}, ""},
           {"PATCH", kPod, {}, ""},
           {"PUT", kPod, {}, ""},
           {"GET", "/api/v1/namespaces/default/secrets/token", {}, ""},
           {"GET", "/api/v1/pods", {}, ""},
           {"GET", kPod + "?watch=true", {}, ""},
           {"GET", kPod + "/log", {}, ""},
           {"GET", "/api/v1/namespaces/Default/pods/web-0", {}, ""},
           {"GET", "/api/v1/namespaces/default/pods/..", {}, ""},
           {"GET", "/api/v1/namespaces//pods/web-0", {}, ""},
           {"GET", "/apis/resource.k8s.io/v1/resourceslices", {}, ""},
           {"GET", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=a&watch=1", {}, ""},
       }) {
    CAPTURE(bad.method, bad.target);
    CHECK(relay_refusal(bad, "") != "");
  }
  CHECK(relay_refusal({"GET", kPod, {}, ""}, "/prefix") != "");
  auto kept = relay_headers({{"authorization", "Bearer x"},
                             {"accept", "application/json"},
                             {"Impersonate-User", "admin"},
                             {"User-Agent", "manifold"},
                             {"Content-Type", "application/json"}});
  CHECK(kept == manifold::http::HttpHeaders{
                    {"Accept", "application/json"}, {"User-Agent", "manifold"}, {"Content-Type", "application/json"}});
}

TEST_CASE("relay protocol: frames round-trip, and malformed ones are decoding errors", "[relay]") {
  relay::RelayRequest request{kServer, 2500ms, {get(kPod), {"PUT", kPod + "/status", {}, "{\"a\":\"\\u00e9\"}"}}, ""};
  relay::RelayRequest back = relay::decode_request(relay::encode_request(request));
  CHECK(back.server == kServer);
  CHECK(back.timeout == 2500ms);
  REQUIRE(back.requests.size() == 2);
  CHECK(back.requests[1].method == "PUT");
  CHECK(back.requests[1].body == request.requests[1].body);
  CHECK(back.requests[0].headers == request.requests[0].headers);

  relay::RelayAnswer answer;
  answer.outcomes.emplace_back(HttpResponse{200, {{"Content-Type", "application/json"}}, "{}"});
  answer.outcomes.emplace_back(TransportError(TransportError::Kind::Timeout, "slow"));
  relay::RelayAnswer decoded = relay::decode_answer(relay::encode_answer(answer), 2);
  REQUIRE(decoded.outcomes.size() == 2);
  CHECK(std::get<HttpResponse>(decoded.outcomes[0]).status == 200);
  CHECK(std::get<TransportError>(decoded.outcomes[1]).kind() == TransportError::Kind::Timeout);
  CHECK(code_of([&] { relay::decode_answer(relay::encode_answer(answer), 3); }) == 6);

  for (const char* bad :
       {"", "[]", "{}", "{\"v\":2,\"server\":\"x\",\"timeoutMs\":1,\"requests\":[]}",
        "{\"v\":1,\"server\":\"x\",\"timeoutMs\":0,\"requests\":[{}]}",
        "{\"v\":1,\"server\":\"x\",\"timeoutMs\":10,\"requests\":[]}",
        "{\"v\":1,\"server\":\"x\",\"timeoutMs\":10,\"requests\":[1]}",
        "{\"v\":1,\"server\":\"x\",\"timeoutMs\":10,\"requests\":[{\"method\":\"GET\"}]}",
        "{\"v\":1,\"server\":\"x\",\"timeoutMs\":10,\"requests\":[{\"method\":\"GET\",\"target\":\"/\","
        "\"headers\":[[1,2]],\"body\":\"\"}]}"}) {
    CAPTURE(bad);
    CHECK(code_of([&] { relay::decode_request(bad); }) == 6);
  }
  for (const char* bad : {"{\"v\":1}", "{\"v\":1,\"refused\":\"\"}",
                          "{\"v\":1,\"outcomes\":[{\"status\":42,"
                          "\"headers\":[],\"body\":\"\"}]}",
                          "{\"v\":1,\"outcomes\":[{\"error\":\"bogus\",\"message\":\"m\"}]}"}) {
    CAPTURE(bad);
    CHECK(code_of([&] { relay::decode_answer(bad, 1); }) == 6);
  }
}

TEST_CASE("relay protocol: frame I/O is bounded in size and time and sees the peer leave", "[relay]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  UniqueFd a(fds[0]), b(fds[1]);
  auto soon = [] { return std::chrono::steady_clock::now() + 5s; };
  relay::write_frame(a.get(), "hello", soon());
  CHECK(relay::read_frame(b.get(), 16, soon()) == "hello");
  relay::write_frame(a.get(), std::string(100, 'x'), soon());
  try {
    relay::read_frame(b.get(), 10, soon());
    FAIL("an oversized frame was read");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::TooLarge);
  }
  try {
    relay::read_frame(a.get(), 10, std::chrono::steady_clock::now());
    FAIL("a frame was read from a silent peer");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::Timeout);
  }
  b.reset();
  try {
    relay::read_frame(a.get(), 10, soon());
    FAIL("a frame was read from a closed peer");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::Closed);
  }
}

TEST_CASE("relay: a batch goes through the agent with the agent's credentials only", "[relay]") {
  Fixture f;
  f.start();
  f.upstream.push_response(200, "{\"kind\":\"Pod\"}");
  f.upstream.push_error(TransportError(TransportError::Kind::Timeout, "upstream slow"));
  RelayTransport client = f.client();
  LogCapture log;
  auto outcomes = client.send_batch({get(kPod), get(kNad)}, 3s);
  REQUIRE(outcomes.size() == 2);
  CHECK(std::get<HttpResponse>(outcomes[0]).body == "{\"kind\":\"Pod\"}");
  const auto& error = std::get<TransportError>(outcomes[1]);
  CHECK(error.kind() == TransportError::Kind::Timeout);
  CHECK(error.retryable());
  CHECK_THAT(error.msg(), Catch::Contains("through the node agent") && Catch::Contains("upstream slow"));
  REQUIRE(f.upstream.requests().size() == 2);
  CHECK(header(f.upstream.requests()[0], "Authorization") == "Bearer agent-token");
  CHECK(header(f.upstream.requests()[0], "Accept") == "application/json");
  CHECK(f.upstream.batches() == std::vector<std::size_t>{2});  // pipelined upstream as one batch
  CHECK(f.upstream.timeouts().front() <= 3s);
  CHECK(client.relayed_batches() == 1);
  CHECK_FALSE(client.went_direct());
  CHECK(f.direct_opened == 0);

  // A second batch, a single send, reuses the agent's upstream transport.
  f.upstream.push_response(200, "{}");
  CHECK(client.send({"PUT", kPod + "/status", {}, "{}"}, 3s).status == 200);
  CHECK(f.upstream_opened == 1);
  CHECK(f.metrics.answered_n == 2);
  // The call's log says once that its requests went through the agent, and where.
  const std::string said = "Kubernetes API requests go through the node agent at " + f.socket;
  CHECK(log.contains(said));
  CHECK(log.text().find(said) == log.text().rfind(said));
  struct stat st {};
  REQUIRE(::stat(f.socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((f.dir.str() + "/run").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  f.server->stop();
  CHECK(::access(f.socket.c_str(), F_OK) != 0);
}

TEST_CASE("relay: without an agent, or when it refuses, the call goes directly", "[relay]") {
  Fixture f;
  SECTION("no socket") {}
  SECTION("another API server") {
    f.start();
    RelayTransport other = f.client("https://10.9.9.9:6443");
    f.direct.push_response(200, "{}");
    CHECK(other.send(get(kPod), 3s).status == 200);
    CHECK(other.went_direct());
    CHECK(f.metrics.refused_n == 1);
    CHECK(f.upstream.requests().empty());
    CHECK(f.direct_opened == 1);
    return;
  }
  SECTION("a call outside the allowlist") {
    f.start();
    RelayTransport client = f.client();
    f.direct.push_response(200, "{}");
    f.direct.push_response(200, "{}");
    auto outcomes = client.send_batch({get(kPod), get("/api/v1/namespaces/default/secrets/s")}, 3s);
    CHECK(outcomes.size() == 2);
    CHECK(f.upstream.requests().empty());
    CHECK(f.direct.requests().size() == 2);
    CHECK(header(f.direct.requests()[0], "Authorization") == "Bearer caller-token");  // direct keeps its own
    return;
  }
  SECTION("a peer uid that is not allowed") {
    RelayServerOptions options;
    options.allowed_uid = ::getuid() + 1;
    f.start(options);
  }
  SECTION("busy") {
    RelayServerOptions options;
    options.max_connections = 0;
    f.start(options);
  }
  SECTION("the agent's credentials cannot be read") {
    f.token = "unreadable";
    f.start();
  }
  RelayTransport client = f.client();
  f.direct.push_response(200, "{\"direct\":true}");
  CHECK(client.send(get(kPod), 3s).body == "{\"direct\":true}");
  CHECK(client.went_direct());
  CHECK(f.direct_opened == 1);
  CHECK(f.upstream.requests().empty());
  // Once direct, the invocation stays direct.
  f.direct.push_response(200, "{}");
  client.send(get(kNad), 3s);
  CHECK(f.direct.requests().size() == 2);
}

TEST_CASE("relay: an answer lost after the hand-over fails each request retryably and goes direct", "[relay]") {
  Fixture f;
  // A fake agent that reads the request frame and closes without answering.
  std::filesystem::create_directories(f.dir.path() / "run");
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, f.socket.c_str());
  REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener.get(), 4) == 0);
  std::thread agent([&] {
    UniqueFd c(::accept(listener.get(), nullptr, nullptr));
    relay::read_frame(c.get(), relay::kMaxRequestFrame, std::chrono::steady_clock::now() + 10s);
  });
  RelayTransport client = f.client();
  auto outcomes = client.send_batch({{"PUT", kPod + "/status", {}, "{}"}, get(kNad)}, 3s);
  agent.join();
  REQUIRE(outcomes.size() == 2);
  for (const auto& o : outcomes) {
    const auto& e = std::get<TransportError>(o);
    CHECK(e.kind() == TransportError::Kind::Closed);
    CHECK(e.retryable());
    CHECK_THAT(e.msg(), Catch::Contains("handed to the node agent"));
  }
  CHECK(f.direct_opened == 0);  // nothing sent again behind the agent's back
  CHECK(client.went_direct());
  f.direct.push_response(200, "{}");
  CHECK(client.send(get(kPod), 3s).status == 200);
  CHECK(f.direct_opened == 1);
}

TEST_CASE("relay: the socket file — stale replaced, foreign or served refused", "[relay]") {
  Fixture f;
  std::filesystem::create_directories(f.dir.path() / "run");
  SECTION("a stale socket of a previous agent is replaced") {
    UniqueFd old(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, f.socket.c_str());
    REQUIRE(::bind(old.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    old.reset();  // bound, never listening: what a killed agent leaves
    f.start();
    f.upstream.push_response(200, "{}");
    RelayTransport client = f.client();
    CHECK(client.send(get(kPod), 3s).status == 200);
    CHECK(client.relayed_batches() == 1);
  }
  SECTION("a regular file is not replaced") {
    f.dir.write("run/agent.sock", "data");
    std::string msg;
    CHECK(code_of([&] { f.start(); }, &msg) == 7);
    CHECK_THAT(msg, Catch::Contains("not a socket"));
  }
  SECTION("a live agent is not displaced") {
    f.start();
    Fixture second;
    second.socket = f.socket;
    std::string msg;
    CHECK(code_of([&] { second.start(); }, &msg) == 7);
    CHECK_THAT(msg, Catch::Contains("another process serves"));
    CHECK(::access(f.socket.c_str(), F_OK) == 0);
  }
  SECTION("a path too long for a Unix socket") {
    f.socket = f.dir.str() + "/" + std::string(120, 'x');
    CHECK(code_of([&] { f.start(); }) == 7);
  }
}

namespace {

/// An upstream that answers every request with its own target, safe to share between threads.
class Echo final : public HttpTransport {
 public:
  HttpResponse send(const HttpRequest& r, std::chrono::milliseconds) override {
    std::lock_guard lock(mu_);
    ++requests_;
    return {200, {}, r.target};
  }
  int requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  std::mutex mu_;
  int requests_ = 0;
};

}  // namespace

TEST_CASE("relay: concurrent CNI calls each get their own answers", "[relay]") {
  TempDir dir;
  const std::string socket = dir.str() + "/agent.sock";
  Counts metrics;
  Echo echo;
  std::atomic<int> opened{0};
  RelayServerOptions options;
  options.socket_path = socket;
  options.server = kServer;
  options.allowed_uid = ::getuid();
  options.scope = std::make_shared<AllowAll>();
  RelayServer server(
      options,
      [&] {
        ++opened;
        return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<Echo>>(echo));
      },
      [] { return std::string(); }, metrics);
  constexpr int kCallers = 8, kBatches = 10;
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0}, direct{0};
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      RelayTransport client(
          socket, kServer,
          [&] {
            ++direct;
            return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<Echo>>(echo));
          },
          std::make_shared<relay::OwnerTrust>(::getuid()));
      for (int b = 0; b < kBatches; ++b) {
        std::string pod = "/api/v1/namespaces/ns" + std::to_string(c) + "/pods/p" + std::to_string(b);
        auto outcomes = client.send_batch({get(pod), get(kNad)}, 10s);
        if (outcomes.size() != 2 || std::get<HttpResponse>(outcomes[0]).body != pod ||
            std::get<HttpResponse>(outcomes[1]).body != kNad)
          ++wrong;
        if (client.send({"PUT", pod + "/status", {}, "{}"}, 10s).body != pod + "/status") ++wrong;
      }
      if (client.went_direct()) ++direct;
    });
  for (auto& t : callers) t.join();
  CHECK(wrong == 0);
  CHECK(direct == 0);
  CHECK(metrics.answered_n == kCallers * kBatches * 2);
  CHECK(metrics.refused_n == 0);
  CHECK(echo.requests() == kCallers * kBatches * 3);
  CHECK(opened <= kCallers);  // upstream transports are pooled, one per concurrent exchange at most
}
