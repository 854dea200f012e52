// Tests of the real HTTPS transport against a loopback TLS server started inside the test: keep-
// alive reuse, reconnect after a server-side close, CA and host-name verification, client
// certificates, timeouts, size limits, lazy TLS initialisation, and ApiClient end to end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "k8s/api_client.h"
#include "k8s/beast_transport.h"
#include "k8s/http_wire.h"
#include "k8s/tls_test_server.h"

using namespace manifold;
using namespace manifold::k8s;
using manifold::k8s::testing::ServerMode;
using manifold::k8s::testing::ServerOptions;
using manifold::k8s::testing::TestCa;
using manifold::k8s::testing::TlsTestServer;
using manifold::util::FakeSleeper;
using manifold::util::SteadyClock;
using std::chrono::milliseconds;

namespace {

/// One PKI shared by all tests of this file (generation is cheap, but there is no need to repeat it).
struct Pki {
  TestCa ca{"manifold-test-ca"};
  TestCa other_ca{"some-other-ca"};
  TestCa client_ca{"manifold-test-client-ca"};
  testing::CertAndKey server = ca.issue("apiserver", {"DNS:localhost", "IP:127.0.0.1", "IP:::1"}, false);
  testing::CertAndKey server_name_only = ca.issue("apiserver", {"DNS:kubernetes.example"}, false);
  testing::CertAndKey client = client_ca.issue("system:node:worker-1", {}, true);
};

const Pki& pki() {
  static const Pki instance;
  return instance;
}

ClusterAuth auth_for(const std::string& host, std::uint16_t port) {
  ClusterAuth auth;
  auth.server = "https://" + host + ":" + std::to_string(port);
  auth.ca_pem = pki().ca.cert_pem();
  return auth;
}

HttpRequest get(const std::string& target) { return HttpRequest{"GET", target, {{"Accept", "application/json"}}, ""}; }

const milliseconds kGenerous{10000};  // never reached in passing tests; bounds a broken one

TransportError::Kind send_expecting_error(BeastTransport& transport, const HttpRequest& request, milliseconds timeout,
                                          std::string& message) {
  try {
    transport.send(request, timeout);
  } catch (const TransportError& e) {
    message = e.msg();
    return e.kind();
  }
  FAIL("send() did not throw");
  return TransportError::Kind::Protocol;
}

}  // namespace

TEST_CASE("BeastTransport creates no TLS state before the first send", "[k8s]") {
  BeastTransport transport(auth_for("127.0.0.1", 1));
  CHECK_FALSE(transport.tls_initialized());
  CHECK(transport.connections_opened() == 0);
}

TEST_CASE("BeastTransport rejects an invalid server URL at construction", "[k8s]") {
  ClusterAuth auth;
  auth.server = "http://127.0.0.1:6443";
  CHECK_THROWS_AS(BeastTransport(auth), cni::CniError);
}

TEST_CASE("BeastTransport reuses one keep-alive connection for consecutive requests", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));

  HttpRequest first = get("/api/v1/namespaces/default/pods/a");
  first.headers.emplace_back("X-Probe", "1");
  HttpResponse r1 = transport.send(first, kGenerous);
  HttpResponse r2 = transport.send(get("/api/v1/namespaces/default/pods/b"), kGenerous);

  CHECK(transport.tls_initialized());
  CHECK(r1.status == 200);
  CHECK(r1.body == R"({"served":"/api/v1/namespaces/default/pods/a"})");
  CHECK(r1.header("content-type") == "application/json");
  CHECK(r2.body == R"({"served":"/api/v1/namespaces/default/pods/b"})");
  CHECK(server.accepts() == 1);
  CHECK(server.handshakes() == 1);
  CHECK(server.server_name_indication().empty());  // no SNI for IP addresses
  CHECK(transport.connections_opened() == 1);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("Host") == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(requests[0].header("X-Probe") == "1");
  CHECK(requests[0].method == "GET");
}

TEST_CASE("BeastTransport sends the request body with its length", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  HttpRequest put{
      "PUT", "/api/v1/namespaces/default/pods/a/status", {{"Content-Type", "application/json"}}, R"({"kind":"Pod"})"};
  CHECK(transport.send(put, kGenerous).status == 200);
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "PUT");
  CHECK(requests[0].body == R"({"kind":"Pod"})");
  CHECK(requests[0].header("Content-Length") == "14");
}

TEST_CASE("serialize_request writes the request line, Host, the headers in order and the length", "[k8s]") {
  HttpRequest put{"PUT",
                  "/api/v1/namespaces/default/pods/a/status",
                  {{"Authorization", "Bearer t"}, {"Accept", "application/json"}},
                  R"({"kind":"Pod"})"};
  CHECK(serialize_request(put, "10.0.0.1:6443") ==
        "PUT /api/v1/namespaces/default/pods/a/status HTTP/1.1\r\nHost: 10.0.0.1:6443\r\n"
        "Authorization: Bearer t\r\nAccept: application/json\r\nContent-Length: 14\r\n\r\n{\"kind\":\"Pod\"}");
  HttpRequest get{"GET", "/api/v1/namespaces/default/pods/a", {{"X-Probe", "1"}}, ""};
  CHECK(serialize_request(get, "[::1]:443") ==
        "GET /api/v1/namespaces/default/pods/a HTTP/1.1\r\nHost: [::1]:443\r\nX-Probe: 1\r\n\r\n");
  // POST and PUT carry a length even when empty; a caller's Content-Length is replaced, not doubled.
  HttpRequest post{"POST", "/e", {{"content-length", "99"}}, ""};
  CHECK(serialize_request(post, "h:1") == "POST /e HTTP/1.1\r\nHost: h:1\r\nContent-Length: 0\r\n\r\n");
}

TEST_CASE("BeastTransport reconnects once when the server closed the kept connection", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::CloseAfterResponse, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  CHECK(transport.send(get("/one"), kGenerous).status == 200);
  HttpResponse second = transport.send(get("/two"), kGenerous);
  CHECK(second.status == 200);
  CHECK(second.body == R"({"served":"/two"})");
  CHECK(server.accepts() == 2);
  CHECK(transport.connections_opened() == 2);
}

TEST_CASE("BeastTransport resolves host names and verifies them (SNI)", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("localhost", server.port()));
  CHECK(transport.send(get("/by-name"), kGenerous).status == 200);
  CHECK(server.server_name_indication() == "localhost");
  CHECK(server.requests().at(0).header("Host") == "localhost:" + std::to_string(server.port()));
}

TEST_CASE("BeastTransport talks to an IPv6 server", "[k8s]") {
  std::unique_ptr<TlsTestServer> server;
  try {
    server = std::make_unique<TlsTestServer>(ServerOptions{pki().server, {}, ServerMode::Respond, true});
  } catch (const std::exception& e) {
    WARN("IPv6 loopback unavailable, test not run: " << e.what());
    return;
  }
  BeastTransport transport(auth_for("[::1]", server->port()));
  CHECK(transport.send(get("/v6"), kGenerous).status == 200);
  auto requests = server->requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].header("Host") == "[::1]:" + std::to_string(server->port()));
}

TEST_CASE("BeastTransport rejects a server certificate from another CA", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.ca_pem = pki().other_ca.cert_pem();
  BeastTransport transport(auth);
  std::string message;
  CHECK(send_expecting_error(transport, get("/x"), kGenerous, message) == TransportError::Kind::TlsVerify);
  CHECK_THAT(message, Catch::Contains("rejected") && Catch::Contains("local issuer"));
  CHECK(server.requests().empty());
}

TEST_CASE("BeastTransport rejects a certificate for another IP address", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server_name_only, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::string message;
  CHECK(send_expecting_error(transport, get("/x"), kGenerous, message) == TransportError::Kind::TlsVerify);
  CHECK_THAT(message, Catch::Contains("IP address mismatch"));
  CHECK(server.requests().empty());
}

TEST_CASE("BeastTransport rejects a certificate for another host name", "[k8s]") {
  TlsTestServer server(
      ServerOptions{pki().ca.issue("apiserver", {"IP:127.0.0.1"}, false), {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("localhost", server.port()));
  std::string message;
  CHECK(send_expecting_error(transport, get("/x"), kGenerous, message) == TransportError::Kind::TlsVerify);
  CHECK_THAT(message, Catch::Contains("hostname mismatch"));
}

TEST_CASE("BeastTransport skips verification only when insecure-skip-tls-verify is set", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server_name_only, {}, ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.ca_pem.clear();
  auth.insecure_skip_tls_verify = true;
  BeastTransport transport(auth);
  CHECK(transport.send(get("/insecure"), kGenerous).status == 200);
}

TEST_CASE("BeastTransport presents the client certificate", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, pki().client_ca.cert_pem(), ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.client_cert_pem = pki().client.cert_pem;
  auth.client_key_pem = pki().client.key_pem;
  BeastTransport transport(auth);
  CHECK(transport.send(get("/mtls"), kGenerous).status == 200);
  CHECK(server.client_common_name() == "system:node:worker-1");
}

TEST_CASE("BeastTransport fails when the server requires a client certificate it lacks", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, pki().client_ca.cert_pem(), ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  CHECK_THROWS_AS(transport.send(get("/mtls"), kGenerous), TransportError);
  CHECK(server.requests().empty());
}

TEST_CASE("BeastTransport reports a mismatched client key as a configuration error", "[k8s]") {
  ClusterAuth auth = auth_for("127.0.0.1", 1);
  auth.client_cert_pem = pki().client.cert_pem;
  auth.client_key_pem = pki().server.key_pem;  // a valid key, but not the certificate's
  BeastTransport transport(auth);
  try {
    transport.send(get("/x"), kGenerous);
    FAIL("send() did not throw");
  } catch (const TransportError&) {
    FAIL("expected a configuration error, not a transport error");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    CHECK_THAT(e.msg(), Catch::Contains("does not match"));
    CHECK_THAT(e.msg(), !Catch::Contains("PRIVATE KEY"));
  }
}

TEST_CASE("BeastTransport reports a garbage CA as a configuration error", "[k8s]") {
  ClusterAuth auth = auth_for("127.0.0.1", 1);
  auth.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  BeastTransport transport(auth);
  try {
    transport.send(get("/x"), kGenerous);
    FAIL("send() did not throw");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    CHECK_THAT(e.msg(), Catch::Contains("certificate authority"));
  }
}

TEST_CASE("BeastTransport times out on a server that never answers", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  // Connect and handshake first, with a generous bound, so the short bound below can only expire
  // while waiting for the answer.
  CHECK(transport.send(get("/warm-up"), kGenerous).status == 200);
  std::string message;
  CHECK(send_expecting_error(transport, get("/hang"), milliseconds(200), message) == TransportError::Kind::Timeout);
  CHECK_THAT(message, Catch::Contains("did not answer within 200 ms"));
  CHECK(server.requests().size() == 2);
  CHECK(transport.connections_opened() == 1);
}

TEST_CASE("BeastTransport refuses an answer larger than the body limit", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::HugeBody, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::string message;
  CHECK(send_expecting_error(transport, get("/huge"), kGenerous, message) == TransportError::Kind::TooLarge);
  CHECK_THAT(message, Catch::Contains("16 MiB"));
}

TEST_CASE("BeastTransport reports a refused connection as retryable", "[k8s]") {
  // A bound but not listening socket holds a loopback port on which connections are refused.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  std::uint16_t closed_port = ntohs(addr.sin_port);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  BeastTransport transport(auth_for("127.0.0.1", closed_port));
  try {
    transport.send(get("/x"), kGenerous);
    FAIL("send() did not throw");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::Connect);
    CHECK(e.retryable());
    CHECK_THAT(e.msg(), Catch::Contains("https://127.0.0.1:" + std::to_string(closed_port)));
  }
}

TEST_CASE("BeastTransport rejects header injection", "[k8s]") {
  BeastTransport transport(auth_for("127.0.0.1", 1));
  HttpRequest request = get("/x");
  request.headers.emplace_back("Authorization", "Bearer abc\r\nX-Evil: 1");
  CHECK_THROWS_AS(transport.send(request, kGenerous), cni::CniError);
  CHECK_FALSE(transport.tls_initialized());
  CHECK_THROWS_AS(transport.send(get("no-slash"), kGenerous), cni::CniError);
  CHECK_THROWS_AS(transport.send(get("/a b"), kGenerous), cni::CniError);
}

TEST_CASE("ApiClient over BeastTransport sends the token and reads the object", "[k8s]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.token = "tok-123";
  BeastTransport transport(auth);
  SteadyClock clock;
  FakeSleeper sleeper;
  ApiClient client(transport, auth, RetryPolicy{}, sleeper, clock);
  Json pod = client.get_pod("default", "web-1");
  Json nad = client.get_nad("kube-system", "macvlan-conf");
  CHECK(pod["served"] == "/api/v1/namespaces/default/pods/web-1");
  CHECK(nad["served"] == "/apis/k8s.cni.cncf.io/v1/namespaces/kube-system/network-attachment-definitions/macvlan-conf");
  CHECK(client.requests_made() == 2);
  CHECK(server.accepts() == 1);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("Authorization") == "Bearer tok-123");
  CHECK(requests[0].header("Accept") == "application/json");
  CHECK_THAT(requests[0].header("User-Agent"), Catch::StartsWith("manifold/"));
  CHECK(sleeper.waits().empty());
}
