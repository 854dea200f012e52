// Tests of TLS session resumption across invocations over the real HTTPS transport and the loopback
// TLS server: a second transport (the next invocation) resumes the session the first one stored; a
// session is offered only to its own binding (server, CA, client identity); a server that declines
// the offered session gets a full handshake, verified against the CA loaded only then — and a
// server certificate that CA did not issue is still rejected; a CA that cannot be loaded at that
// point is a configuration error, as it is without a stored session. A long-lived transport (the
// agent) that reconnects resumes the session of its own last full handshake.
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "http/beast_transport.h"
#include "http/tls_resumption.h"
#include "http/tls_session_store.h"
#include "http/tls_test_server.h"

using namespace manifold;
using namespace manifold::http;
using manifold::http::testing::ServerMode;
using manifold::http::testing::ServerOptions;
using manifold::http::testing::TestCa;
using manifold::http::testing::TlsTestServer;
using std::chrono::milliseconds;

namespace {

struct ResumptionPki {
  TestCa ca{"manifold-resumption-ca"};
  TestCa rogue_ca{"manifold-rogue-ca"};
  testing::CertAndKey server = ca.issue("apiserver", {"IP:127.0.0.1"}, false);
  testing::CertAndKey rogue_server = rogue_ca.issue("apiserver", {"IP:127.0.0.1"}, false);
};

const ResumptionPki& pki() {
  static const ResumptionPki instance;
  return instance;
}

const milliseconds kGenerous{10000};  // never reached in passing tests; bounds a broken one

/// The in-memory session directory shared by the "invocations" of one test.
struct Node {
  std::shared_ptr<util::FakeFileReader> files = std::make_shared<util::FakeFileReader>();
  std::shared_ptr<util::FakeFileWriter> writer = std::make_shared<util::FakeFileWriter>(*files);
  std::shared_ptr<TlsSessionStore> store = std::make_shared<TlsSessionStore>("/cni/.tls", files, writer);
};

ClusterAuth auth_for(const TlsTestServer& server, const std::string& ca_pem = pki().ca.cert_pem()) {
  ClusterAuth auth;
  auth.server = "https://127.0.0.1:" + std::to_string(server.port());
  auth.ca_pem = ca_pem;
  return auth;
}

/// One invocation: a transport of its own sends one GET; returns how many handshakes it resumed.
int invocation(const ClusterAuth& auth, const Node& node) {
  BeastTransport transport(auth, node.store);
  HttpResponse res = transport.send(HttpRequest{"GET", "/api/v1/namespaces/default/pods/web", {}, ""}, kGenerous);
  CHECK(res.status == 200);
  return transport.resumed_handshakes();
}

/// Copies the session stored for `from` so that it is offered to `to` (as if `to`'s server had been
/// restarted with new ticket keys behind the same address).
void plant_session(Node& node, const ClusterAuth& from, const ClusterAuth& to) {
  std::string text = node.files->read(node.store->path());
  const std::string from_binding = beast_detail::session_binding(from);
  text.replace(text.find(from_binding), from_binding.size(), beast_detail::session_binding(to));
  node.files->add(node.store->path(), text);
}

/// The DER bytes of a PEM certificate.
std::string der_of(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  REQUIRE(cert);
  unsigned char* out = nullptr;
  const int n = i2d_X509(cert.get(), &out);
  REQUIRE(n > 0);
  std::string der(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
  OPENSSL_free(out);
  return der;
}

}  // namespace

TEST_CASE("BeastTransport resumes the TLS session the previous invocation stored", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  Node node;
  const ClusterAuth auth = auth_for(server);
  CHECK(invocation(auth, node) == 0);  // nothing stored yet: full handshake, session stored
  const std::string path = node.store->path();
  REQUIRE(node.writer->written().count(path) == 1);
  CHECK(node.writer->written().at(path) == 0600);
  // The server's certificate is left out of the stored session: a resumed handshake never needs it.
  const std::string stored = *node.store->load(beast_detail::session_binding(auth), std::time(nullptr));
  CHECK(stored.find(der_of(pki().server.cert_pem)) == std::string::npos);
  CHECK(invocation(auth, node) == 1);
  CHECK(invocation(auth, node) == 1);  // a resumed session stays valid; nothing is rewritten
  CHECK(server.handshakes() == 3);
  CHECK(node.writer->written().size() == 1);
}

TEST_CASE("BeastTransport offers a stored session only to the identity it was made for", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  Node node;
  ClusterAuth auth = auth_for(server);
  CHECK(invocation(auth, node) == 0);
  ClusterAuth other_ca = auth;
  other_ca.ca_pem += "\n";  // other trust anchor bytes: another binding
  CHECK(beast_detail::session_binding(other_ca) != beast_detail::session_binding(auth));
  CHECK(invocation(other_ca, node) == 0);
  ClusterAuth insecure = auth;
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  CHECK(beast_detail::session_binding(insecure) != beast_detail::session_binding(auth));
  ClusterAuth with_client = auth;
  with_client.client_cert_pem = pki().server.cert_pem;
  with_client.client_key_pem = pki().server.key_pem;
  CHECK(beast_detail::session_binding(with_client) != beast_detail::session_binding(auth));
  // The other identity's full handshake replaced the one stored file.
  CHECK(invocation(auth, node) == 0);
  CHECK(invocation(auth, node) == 1);
  CHECK(node.writer->written().size() == 1);
}

TEST_CASE("BeastTransport makes a verified full handshake when the server declines the session", "[http]") {
  TlsTestServer first(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  TlsTestServer second(ServerOptions{pki().server, {}, ServerMode::Respond, false});  // other ticket keys
  Node node;
  CHECK(invocation(auth_for(first), node) == 0);
  plant_session(node, auth_for(first), auth_for(second));
  CHECK(invocation(auth_for(second), node) == 0);  // declined: the CA is loaded and verifies the chain
  CHECK(invocation(auth_for(second), node) == 1);  // the full handshake's session was stored
}

TEST_CASE("BeastTransport still rejects a certificate from another CA when it offered a session", "[http]") {
  TlsTestServer first(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  TlsTestServer rogue(ServerOptions{pki().rogue_server, {}, ServerMode::Respond, false});
  Node node;
  CHECK(invocation(auth_for(first), node) == 0);
  plant_session(node, auth_for(first), auth_for(rogue));
  BeastTransport transport(auth_for(rogue), node.store);
  try {
    transport.send(HttpRequest{"GET", "/api", {}, ""}, kGenerous);
    FAIL("the rogue server was accepted");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::TlsVerify);
  }
  CHECK(rogue.requests().empty());
}

TEST_CASE("BeastTransport reports a CA it loads only for a declined session as a configuration error", "[http]") {
  TlsTestServer first(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  TlsTestServer second(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  Node node;
  CHECK(invocation(auth_for(first), node) == 0);
  const ClusterAuth broken = auth_for(second, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  plant_session(node, auth_for(first), broken);
  BeastTransport transport(broken, node.store);
  try {
    transport.send(HttpRequest{"GET", "/api", {}, ""}, kGenerous);
    FAIL("a broken CA was accepted");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    CHECK_THAT(e.what(), Catch::Contains("cannot load the certificate authority"));
  }
  CHECK(second.requests().empty());
}

namespace {

/// Sends `count` GETs on `transport` (against a server that closes after each answer, every one
/// on a new connection).
void send_gets(BeastTransport& transport, int count) {
  for (int i = 0; i < count; ++i)
    CHECK(transport.send(HttpRequest{"GET", "/api/v1/namespaces/default/pods/web", {}, ""}, kGenerous).status == 200);
}

}  // namespace

TEST_CASE("a long-lived transport reconnects with the session of its own full handshake", "[http]") {
  TlsTestServer server(ServerOptions{pki().server, {}, ServerMode::AnnounceClose, false});
  Node node;
  BeastTransport transport(auth_for(server), node.store);  // nothing stored: the agent's first start
  send_gets(transport, 3);
  CHECK(server.handshakes() == 3);
  CHECK(transport.resumed_handshakes() == 2);
  CHECK(invocation(auth_for(server), node) == 1);  // and that session was stored for the next process
}

TEST_CASE("a long-lived transport whose stored session is declined adopts the new one", "[http]") {
  TlsTestServer first(ServerOptions{pki().server, {}, ServerMode::Respond, false});
  TlsTestServer restarted(ServerOptions{pki().server, {}, ServerMode::AnnounceClose, false});  // new ticket keys
  Node node;
  CHECK(invocation(auth_for(first), node) == 0);
  plant_session(node, auth_for(first), auth_for(restarted));
  const std::string planted = node.files->read(node.store->path());
  BeastTransport transport(auth_for(restarted), node.store);
  send_gets(transport, 3);  // declined, then the new session twice
  CHECK(transport.resumed_handshakes() == 2);
  CHECK(node.files->read(node.store->path()) != planted);
  CHECK(invocation(auth_for(restarted), node) == 1);
}
