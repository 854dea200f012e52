// Tests of batches over the real HTTPS transport against the loopback TLS server: a batch is
// pipelined (every request after the first had arrived before the server read it, on one
// connection), answers come back in order, a server that announces the close after an answer gets
// the rest again on a new connection, one that drops the connection leaves the rest with Closed
// errors, and ApiClient sends again only the calls of a batch that got no answer.
#include <catch2/catch.hpp>

#include "http/beast_transport.h"
#include "http/tls_test_server.h"
#include "k8s/api_client.h"

using namespace manifold;
using namespace manifold::http;
using namespace manifold::k8s;
using manifold::http::testing::ServerMode;
using manifold::http::testing::ServerOptions;
using manifold::http::testing::TestCa;
using manifold::http::testing::TlsTestServer;
using std::chrono::milliseconds;

namespace {

struct PipelinePki {
  TestCa ca{"manifold-pipeline-ca"};
  testing::CertAndKey server = ca.issue("apiserver", {"IP:127.0.0.1"}, false);
};

const PipelinePki& pki() {
  static const PipelinePki instance;
  return instance;
}

ClusterAuth auth_for(const TlsTestServer& server) {
  ClusterAuth auth;
  auth.server = "https://127.0.0.1:" + std::to_string(server.port());
  auth.ca_pem = pki().ca.cert_pem();
  return auth;
}

std::vector<HttpRequest> gets(std::initializer_list<const char*> targets) {
  std::vector<HttpRequest> out;
  for (const char* t : targets) out.push_back(HttpRequest{"GET", t, {{"Accept", "application/json"}}, ""});
  return out;
}

const milliseconds kGenerous{10000};  // never reached in passing tests; bounds a broken one

std::string body_of(const BatchOutcome& outcome) {
  const auto* response = std::get_if<HttpResponse>(&outcome);
  return response ? response->body : "error: " + std::get<TransportError>(outcome).msg();
}

}  // namespace

TEST_CASE("BeastTransport pipelines a batch on one connection and returns the answers in order", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for(server));
  auto out = transport.send_batch(gets({"/a", "/b", "/c"}), kGenerous);
  REQUIRE(out.size() == 3);
  CHECK(body_of(out[0]) == R"({"served":"/a"})");
  CHECK(body_of(out[1]) == R"({"served":"/b"})");
  CHECK(body_of(out[2]) == R"({"served":"/c"})");
  CHECK(server.accepts() == 1);
  auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  // The server never waited for the second and third request: they came with the first.
  CHECK_FALSE(seen[0].arrived_early);
  CHECK(seen[1].arrived_early);
  CHECK(seen[2].arrived_early);

  // The kept connection serves the next batch too, and a lone send() after it.
  auto again = transport.send_batch(gets({"/d", "/e"}), kGenerous);
  CHECK(body_of(again[1]) == R"({"served":"/e"})");
  CHECK(transport.send(gets({"/f"}).front(), kGenerous).body == R"({"served":"/f"})");
  CHECK(server.accepts() == 1);
  CHECK(transport.connections_opened() == 1);
}

TEST_CASE("BeastTransport sends requests again when the server announced the close after an answer", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::AnnounceClose, false});
  BeastTransport transport(auth_for(server));
  auto out = transport.send_batch(gets({"/a", "/b", "/c"}), kGenerous);
  REQUIRE(out.size() == 3);
  CHECK(body_of(out[0]) == R"({"served":"/a"})");
  CHECK(body_of(out[1]) == R"({"served":"/b"})");
  CHECK(body_of(out[2]) == R"({"served":"/c"})");
  CHECK(server.accepts() == 3);
  // Each connection answered exactly one request; the server read only the first of each.
  auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].connection == 1);
  CHECK(seen[1].connection == 2);
  CHECK(seen[2].connection == 3);
}

TEST_CASE("BeastTransport gives every unanswered request of a batch the connection's failure", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::CloseAfterResponse, false});
  BeastTransport transport(auth_for(server));
  auto out = transport.send_batch(gets({"/a", "/b", "/c"}), kGenerous);
  REQUIRE(out.size() == 3);
  CHECK(body_of(out[0]) == R"({"served":"/a"})");
  for (std::size_t i = 1; i < 3; ++i) {
    const auto* error = std::get_if<TransportError>(&out[i]);
    REQUIRE(error != nullptr);
    CHECK(error->kind() == TransportError::Kind::Closed);
    CHECK(error->retryable());
  }
  CHECK(server.accepts() == 1);
}

TEST_CASE("BeastTransport replaces a kept connection found closed before a batch's first answer", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::CloseAfterResponse, false});
  BeastTransport transport(auth_for(server));
  CHECK(transport.send(gets({"/first"}).front(), kGenerous).status == 200);
  auto out = transport.send_batch(gets({"/a"}), kGenerous);
  CHECK(body_of(out[0]) == R"({"served":"/a"})");
  CHECK(server.accepts() == 2);
}

TEST_CASE("BeastTransport fails a whole batch that cannot connect, request by request", "[http]") {
  ClusterAuth auth;
  auth.server = "https://127.0.0.1:1";
  auth.ca_pem = pki().ca.cert_pem();
  BeastTransport transport(auth);
  auto out = transport.send_batch(gets({"/a", "/b"}), kGenerous);
  REQUIRE(out.size() == 2);
  for (const auto& o : out) {
    REQUIRE(std::holds_alternative<TransportError>(o));
    CHECK(std::get<TransportError>(o).kind() == TransportError::Kind::Connect);
  }
}

TEST_CASE("ApiClient sends again only the calls of a batch that got no answer", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::CloseAfterResponse, false});
  BeastTransport transport(auth_for(server));
  util::FakeClock clock;
  util::FakeSleeper sleeper(clock);
  FixedJitter jitter(0.0);
  util::FakeFileReader files;
  RetryPolicy policy;
  ApiClient client(transport, auth_for(server), policy, sleeper, clock, files, jitter);
  // The server answers one request per connection: three attempts, each answering one more call.
  auto out = client.get_nads({{"default", "a"}, {"default", "b"}, {"default", "c"}});
  REQUIRE(out.size() == 3);
  for (auto& o : out) {
    // The test server's answer has no kind: decoded as an object all the same.
    Json nad = std::move(o).take();
    CHECK(nad.contains("served"));
  }
  CHECK(server.accepts() == 3);
  CHECK(client.requests_made() == 3 + 2 + 1);
  CHECK(server.requests().size() == 3);
}
