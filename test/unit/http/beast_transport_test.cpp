// Tests of the real HTTPS transport against a loopback TLS server started inside the test: keep-
// alive reuse, reconnect after a server-side close, CA and host-name verification, client
// certificates, timeouts, size limits, lazy TLS initialisation, ApiClient end to end, and streamed
// answers (watch bodies) scripted byte by byte, with the test deciding when the server speaks.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <thread>

#include "http/beast_transport.h"
#include "http/http_wire.h"
#include "http/tls_test_server.h"
#include "k8s/api_client.h"
#include "k8s/watch_stream.h"

using namespace manifold;
using namespace manifold::http;
using namespace manifold::k8s;
using manifold::http::testing::ServerMode;
using manifold::http::testing::ServerOptions;
using manifold::http::testing::TestCa;
using manifold::http::testing::TlsTestServer;
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

TEST_CASE("BeastTransport creates no TLS state before the first send", "[http]") {
  BeastTransport transport(auth_for("127.0.0.1", 1));
  CHECK_FALSE(transport.tls_initialized());
  CHECK(transport.connections_opened() == 0);
}

TEST_CASE("BeastTransport rejects an invalid server URL at construction", "[http]") {
  ClusterAuth auth;
  auth.server = "http://127.0.0.1:6443";
  CHECK_THROWS_AS(BeastTransport(auth), cni::CniError);
}

TEST_CASE("BeastTransport reuses one keep-alive connection for consecutive requests", "[http]") {
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

TEST_CASE("BeastTransport sends the request body with its length", "[http]") {
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

TEST_CASE("serialize_request writes the request line, Host, the headers in order and the length", "[http]") {
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

TEST_CASE("BeastTransport reconnects once when the server closed the kept connection", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::CloseAfterResponse, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  CHECK(transport.send(get("/one"), kGenerous).status == 200);
  HttpResponse second = transport.send(get("/two"), kGenerous);
  CHECK(second.status == 200);
  CHECK(second.body == R"({"served":"/two"})");
  CHECK(server.accepts() == 2);
  CHECK(transport.connections_opened() == 2);
}

TEST_CASE("BeastTransport resolves host names and verifies them (SNI)", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("localhost", server.port()));
  CHECK(transport.send(get("/by-name"), kGenerous).status == 200);
  CHECK(server.server_name_indication() == "localhost");
  CHECK(server.requests().at(0).header("Host") == "localhost:" + std::to_string(server.port()));
}

TEST_CASE("BeastTransport talks to an IPv6 server", "[http]") {
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

TEST_CASE("BeastTransport rejects a server certificate from another CA", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.ca_pem = pki().other_ca.cert_pem();
  BeastTransport transport(auth);
  std::string message;
  CHECK(send_expecting_error(transport, get("/x"), kGenerous, message) == TransportError::Kind::TlsVerify);
  CHECK_THAT(message, Catch::Contains("rejected") && Catch::Contains("local issuer"));
  CHECK(server.requests().empty());
}

TEST_CASE("BeastTransport rejects a certificate for another IP address", "[http]") {
  TlsTestServer server(ServerOptions{pki().server_name_only, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::string message;
  CHECK(send_expecting_error(transport, get("/x"), kGenerous, message) == TransportError::Kind::TlsVerify);
  CHECK_THAT(message, Catch::Contains("IP address mismatch"));
  CHECK(server.requests().empty());
}

TEST_CASE("BeastTransport rejects a certificate for another host name", "[http]") {
  TlsTestServer server(
      ServerOptions{pki().ca.issue("apiserver", {"IP:127.0.0.1"}, false), {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("localhost", server.port()));
  std::string message;
  CHECK(send_expecting_error(transport, get("/x"), kGenerous, message) == TransportError::Kind::TlsVerify);
  CHECK_THAT(message, Catch::Contains("hostname mismatch"));
}

TEST_CASE("BeastTransport skips verification only when insecure-skip-tls-verify is set", "[http]") {
  TlsTestServer server(ServerOptions{pki().server_name_only, {}, ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.ca_pem.clear();
  auth.insecure_skip_tls_verify = true;
  BeastTransport transport(auth);
  CHECK(transport.send(get("/insecure"), kGenerous).status == 200);
}

TEST_CASE("BeastTransport presents the client certificate", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, pki().client_ca.cert_pem(), ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.client_cert_pem = pki().client.cert_pem;
  auth.client_key_pem = pki().client.key_pem;
  BeastTransport transport(auth);
  CHECK(transport.send(get("/mtls"), kGenerous).status == 200);
  CHECK(server.client_common_name() == "system:node:worker-1");
}

TEST_CASE("BeastTransport fails when the server requires a client certificate it lacks", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, pki().client_ca.cert_pem(), ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  CHECK_THROWS_AS(transport.send(get("/mtls"), kGenerous), TransportError);
  CHECK(server.requests().empty());
}

TEST_CASE("BeastTransport reports a mismatched client key as a configuration error", "[http]") {
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

TEST_CASE("BeastTransport reports a garbage CA as a configuration error", "[http]") {
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

TEST_CASE("BeastTransport times out on a server that never answers", "[http]") {
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

TEST_CASE("BeastTransport refuses an answer larger than the body limit", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::HugeBody, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::string message;
  CHECK(send_expecting_error(transport, get("/huge"), kGenerous, message) == TransportError::Kind::TooLarge);
  CHECK_THAT(message, Catch::Contains("16 MiB"));
}

TEST_CASE("BeastTransport reports a refused connection as retryable", "[http]") {
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

TEST_CASE("BeastTransport rejects header injection", "[http]") {
  BeastTransport transport(auth_for("127.0.0.1", 1));
  HttpRequest request = get("/x");
  request.headers.emplace_back("Authorization", "Bearer abc\r\nX-Evil: 1");
  CHECK_THROWS_AS(transport.send(request, kGenerous), cni::CniError);
  CHECK_FALSE(transport.tls_initialized());
  CHECK_THROWS_AS(transport.send(get("no-slash"), kGenerous), cni::CniError);
  CHECK_THROWS_AS(transport.send(get("/a b"), kGenerous), cni::CniError);
}

TEST_CASE("ApiClient over BeastTransport sends the token and reads the object", "[http]") {
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

// ---- stream() ----

namespace {

using manifold::http::testing::chunk;
using manifold::http::testing::StreamScript;

const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
const std::string kLastChunk = "0\r\n\r\n";

ServerOptions plain() { return ServerOptions{pki().server, {}, ServerMode::Respond, false}; }

/// Generous bounds: a passing test never reaches them, they only bound a broken one.
StreamOptions generous() {
  StreamOptions options;
  options.open_timeout = kGenerous;
  options.idle_timeout = kGenerous;
  return options;
}

/// Streams `target` into `received`; on_data returns `keep_going(piece count)`.
StreamResult stream_to(
    BeastTransport& transport, const std::string& target, const StreamOptions& options,
    std::vector<std::string>& received,
    const std::function<bool(std::size_t)>& keep_going = [](std::size_t) { return true; }) {
  return transport.stream(get(target), options, [&](std::string_view piece) {
    received.emplace_back(piece);
    return keep_going(received.size());
  });
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p;
  return out;
}

/// The TransportError a stream() throws; `received` gets the pieces delivered before.
TransportError stream_error(BeastTransport& transport, const std::string& target, const StreamOptions& options,
                            std::vector<std::string>& received) {
  try {
    stream_to(transport, target, options, received);
  } catch (const TransportError& e) {
    return e;
  }
  FAIL("stream() did not throw");
  return TransportError(TransportError::Kind::Protocol, "");
}

}  // namespace

TEST_CASE("BeastTransport streams a chunked body piece by piece as the server sends it", "[http]") {
  const std::string added = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})";
  const std::string modified = R"({"type":"MODIFIED","object":{"metadata":{"name":"a"}}})";
  const std::string deleted = R"({"type":"DELETED","object":{"metadata":{"name":"a"}}})";
  StreamScript script;
  script.head = kChunkedHead;
  // A line split across chunks, then one chunk holding the end of a line and a whole other line.
  script.writes = {chunk(added + "\n"), chunk(modified.substr(0, 20)),
                   chunk(modified.substr(20) + "\n" + deleted + "\n"), kLastChunk};
  script.gated = true;                   // each write waits until the client received the one before it
  script.end = StreamScript::End::Hang;  // so the body ends by its last chunk, not by a close
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));

  WatchDecoder decoder;
  std::vector<std::string> types;
  server.release();
  StreamResult result = transport.stream(get("/stream/api/v1/pods?watch=1"), generous(), [&](std::string_view piece) {
    for (const auto& event : decoder.feed(piece)) types.push_back(event.type);
    server.release();
    return true;
  });
  CHECK(result.end == StreamEnd::Completed);
  CHECK(result.head.status == 200);
  CHECK(result.head.header("transfer-encoding") == "chunked");
  CHECK(result.head.body.empty());
  CHECK(types == std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"});
  CHECK(decoder.pending() == 0);
  CHECK(server.stream_writes() == 4);
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].target == "/stream/api/v1/pods?watch=1");
  CHECK(requests[0].header("Host") == "127.0.0.1:" + std::to_string(server.port()));
}

TEST_CASE("BeastTransport streams one-byte chunks and chunks with extensions", "[http]") {
  const std::string line = R"({"type":"BOOKMARK","object":{}})"
                           "\n";
  StreamScript script;
  script.head = kChunkedHead;
  for (std::size_t i = 0; i < line.size(); ++i)
    script.writes.push_back(chunk(line.substr(i, 1), i % 3 == 0 ? ";ext=\"v\"" : ""));
  script.writes.push_back("0;done=1\r\nX-Trailer: t\r\n\r\n");
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  CHECK(stream_to(transport, "/stream", generous(), received).end == StreamEnd::Completed);
  CHECK(joined(received) == line);
}

TEST_CASE("BeastTransport ends a stream by Content-Length or by a clean close", "[http]") {
  StreamScript script;
  SECTION("Content-Length") {
    script.head = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n";
    script.writes = {"abc", "def"};
    script.end = StreamScript::End::Hang;
  }
  SECTION("close-delimited body, closed with close_notify") {
    script.head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
    script.writes = {"abc", "def"};
    script.end = StreamScript::End::Close;
  }
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  CHECK(stream_to(transport, "/stream", generous(), received).end == StreamEnd::Completed);
  CHECK(joined(received) == "abcdef");
}

TEST_CASE("BeastTransport reports a watch stream cut before its end as Closed", "[http]") {
  StreamScript script;
  script.head = kChunkedHead;
  script.writes = {chunk("first\n"), "40\r\nabc"};  // the second chunk announces 64 bytes, sends 3
  SECTION("TLS close_notify") { script.end = StreamScript::End::Close; }
  SECTION("TCP close without close_notify") { script.end = StreamScript::End::Drop; }
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  TransportError e = stream_error(transport, "/stream", generous(), received);
  CHECK(e.kind() == TransportError::Kind::Closed);
  CHECK(e.retryable());
  CHECK_THAT(e.msg(), Catch::Contains("closed the watch stream"));
  CHECK(joined(received).starts_with("first\n"));
}

TEST_CASE("BeastTransport times out a watch stream silent for longer than the idle bound", "[http]") {
  StreamScript script;
  script.head = kChunkedHead + chunk("one\n");  // one write: the piece cannot lag behind the header
  script.end = StreamScript::End::Hang;         // never sends again: the bound, not a race, decides
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  StreamOptions options = generous();
  options.idle_timeout = milliseconds(200);
  std::vector<std::string> received;
  TransportError e = stream_error(transport, "/stream", options, received);
  CHECK(e.kind() == TransportError::Kind::Timeout);
  CHECK_THAT(e.msg(), Catch::Contains("sent nothing for 200 ms"));
  CHECK(joined(received) == "one\n");
}

TEST_CASE("BeastTransport times out opening a stream the server never answers", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  StreamOptions options = generous();
  options.open_timeout = milliseconds(200);
  std::vector<std::string> received;
  TransportError e = stream_error(transport, "/hang", options, received);
  CHECK(e.kind() == TransportError::Kind::Timeout);
  CHECK_THAT(e.msg(), Catch::Contains("200 ms"));  // "did not answer within", unless a loaded machine is slower
  CHECK(received.empty());
}

TEST_CASE("BeastTransport stops a stream when on_tick returns false", "[http]") {
  StreamScript script;
  script.head = kChunkedHead;
  script.writes = {chunk("one\n")};
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  StreamOptions options = generous();  // only on_tick can end this stream without an error
  options.tick = milliseconds(5);
  std::vector<std::string> received;
  bool wait_for_data = true;  // count ticks only once the piece arrived, however long opening takes
  int ticks = 0;
  options.on_tick = [&] { return (wait_for_data && received.empty()) || ++ticks < 3; };
  SECTION("while the body is silent") {
    StreamResult result = stream_to(transport, "/stream", options, received);
    CHECK(result.end == StreamEnd::Stopped);
    CHECK(result.head.status == 200);
    CHECK(joined(received) == "one\n");
  }
  SECTION("while the server has not answered yet") {
    wait_for_data = false;
    StreamResult result = stream_to(transport, "/hang", options, received);
    CHECK(result.end == StreamEnd::Stopped);
    CHECK(result.head.status == 0);
    CHECK(received.empty());
  }
  CHECK(ticks == 3);
  // The transport is still usable for requests afterwards.
  CHECK(transport.send(get("/after"), kGenerous).status == 200);
}

TEST_CASE("BeastTransport stops a stream when on_data returns false", "[http]") {
  StreamScript script;
  script.head = kChunkedHead;
  script.writes = {chunk("one\n"), chunk("two\n")};
  script.gated = true;
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  server.release();  // only the first chunk is ever sent
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  StreamResult result = stream_to(transport, "/stream", generous(), received, [](std::size_t) { return false; });
  CHECK(result.end == StreamEnd::Stopped);
  CHECK(received == std::vector<std::string>{"one\n"});
}

TEST_CASE("BeastTransport returns a non-2xx stream answer's body in the head", "[http]") {
  const std::string status = R"({"kind":"Status","status":"Failure","reason":"Expired","code":410})";
  StreamScript script;
  SECTION("with a Content-Length") {
    script.head =
        "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(status.size()) +
        "\r\n\r\n";
    script.writes = {status.substr(0, 10), status.substr(10)};
  }
  SECTION("chunked") {
    script.head = "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    script.writes = {chunk(status.substr(0, 10)), chunk(status.substr(10)), kLastChunk};
  }
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  StreamResult result = stream_to(transport, "/stream", generous(), received);
  CHECK(result.end == StreamEnd::Completed);
  CHECK(result.head.status == 410);
  CHECK(result.head.header("content-type") == "application/json");
  CHECK(result.head.body == status);
  CHECK(received.empty());
}

TEST_CASE("BeastTransport bounds a stream's error body and header block", "[http]") {
  StreamScript script;
  std::string expected;
  SECTION("error body") {
    script.head = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 20000000\r\n\r\n";
    expected = "16 MiB";
  }
  SECTION("header block") {
    script.head = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(70000, 'h') + "\r\n\r\n";
    expected = "64 KiB of headers";
  }
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  TransportError e = stream_error(transport, "/stream", generous(), received);
  CHECK(e.kind() == TransportError::Kind::TooLarge);
  CHECK_THAT(e.msg(), Catch::Contains(expected));
  CHECK(received.empty());
}

TEST_CASE("BeastTransport reports an invalid streamed body as a protocol error", "[http]") {
  StreamScript script;
  script.head = kChunkedHead;
  script.writes = {chunk("ok\n"), "zz\r\n"};  // not a chunk size
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::vector<std::string> received;
  TransportError e = stream_error(transport, "/stream", generous(), received);
  CHECK(e.kind() == TransportError::Kind::Protocol);
  CHECK_FALSE(e.retryable());
}

TEST_CASE("BeastTransport streams on a connection of its own and keeps the send() connection", "[http]") {
  StreamScript script;
  script.head = kChunkedHead;
  script.writes = {chunk("x\n"), kLastChunk};
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  CHECK(transport.send(get("/before"), kGenerous).status == 200);
  std::vector<std::string> received;
  StreamResult result = transport.stream(get("/stream"), generous(), [&](std::string_view piece) {
    received.emplace_back(piece);
    return transport.send(get("/during"), kGenerous).status == 200;  // send() while the stream is open
  });
  CHECK(result.end == StreamEnd::Completed);
  CHECK(transport.send(get("/after"), kGenerous).status == 200);
  CHECK(joined(received) == "x\n");
  CHECK(transport.connections_opened() == 2);
  CHECK(server.accepts() == 2);
  auto requests = server.requests();
  REQUIRE(requests.size() == 4);
  std::map<std::string, int> connection_of;
  for (const auto& r : requests) connection_of[r.target] = r.connection;
  CHECK(connection_of["/before"] == 1);
  CHECK(connection_of["/stream"] == 2);
  CHECK(connection_of["/during"] == 1);
  CHECK(connection_of["/after"] == 1);
}

TEST_CASE("BeastTransport verifies the server of a stream like that of a request", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  ClusterAuth auth = auth_for("127.0.0.1", server.port());
  auth.ca_pem = pki().other_ca.cert_pem();
  BeastTransport transport(auth);
  std::vector<std::string> received;
  TransportError e = stream_error(transport, "/stream", generous(), received);
  CHECK(e.kind() == TransportError::Kind::TlsVerify);
  CHECK(server.requests().empty());
  CHECK(transport.tls_initialized());
}

TEST_CASE("BeastTransport streams on one thread while another sends", "[http]") {
  StreamScript script;
  script.head = kChunkedHead;
  script.writes = {chunk("late\n"), kLastChunk};
  script.gated = true;
  script.end = StreamScript::End::Hang;
  TlsTestServer server(plain(), script);
  BeastTransport transport(auth_for("127.0.0.1", server.port()));
  std::string streamed;
  std::optional<StreamEnd> end;
  std::string failure;
  std::thread watcher([&] {
    try {
      end = transport
                .stream(get("/stream"), generous(),
                        [&](std::string_view piece) {
                          streamed += piece;
                          return true;
                        })
                .end;
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  // The stream's body is held back until both requests were answered on the other connection.
  int ok = 0;
  for (const char* target : {"/one", "/two"}) ok += transport.send(get(target), kGenerous).status == 200 ? 1 : 0;
  server.release();
  server.release();
  watcher.join();
  CHECK(ok == 2);
  CHECK(failure.empty());
  CHECK(end == StreamEnd::Completed);
  CHECK(streamed == "late\n");
  CHECK(transport.connections_opened() == 2);
}
