// Implementation of the test PKI (OpenSSL X509/EVP API, RAII via unique_ptr deleters) and of the
// loopback HTTPS server (synchronous Asio/Beast, a thread per connection).
#include "http/tls_test_server.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace manifold::http::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

PkeyPtr make_key() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  return key;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string cert_to_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(bio && PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  return bio_text(bio.get());
}

std::string key_to_pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(bio && PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return bio_text(bio.get());
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  check(ok == 1, "X509_add_ext");
}

X509Ptr new_cert(const std::string& common_name, EVP_PKEY* key, long serial) {
  X509Ptr cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  check(X509_set_pubkey(cert.get(), key) == 1, "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0) == 1,
        "X509_NAME_add_entry_by_txt");
  return cert;
}

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

struct TestCa::Native {
  PkeyPtr key;
  X509Ptr cert;
  mutable long next_serial = 2;
};

TestCa::TestCa(const std::string& common_name) : native_(std::make_unique<Native>()) {
  native_->key = make_key();
  native_->cert = new_cert(common_name, native_->key.get(), 1);
  X509* cert = native_->cert.get();
  check(X509_set_issuer_name(cert, X509_get_subject_name(cert)) == 1, "X509_set_issuer_name");
  add_extension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(cert, cert, NID_subject_key_identifier, "hash");
  check(X509_sign(cert, native_->key.get(), EVP_sha256()) > 0, "X509_sign");
  ca_.cert_pem = cert_to_pem(cert);
  ca_.key_pem = key_to_pem(native_->key.get());
}

TestCa::~TestCa() = default;

CertAndKey TestCa::issue(const std::string& common_name, const std::vector<std::string>& sans, bool client) const {
  PkeyPtr key = make_key();
  X509Ptr cert = new_cert(common_name, key.get(), native_->next_serial++);
  X509* ca = native_->cert.get();
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(ca)) == 1, "X509_set_issuer_name");
  add_extension(cert.get(), ca, NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), ca, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_extension(cert.get(), ca, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
  add_extension(cert.get(), ca, NID_authority_key_identifier, "keyid:always");
  if (!sans.empty()) {
    std::string joined;
    for (const auto& san : sans) joined += (joined.empty() ? "" : ",") + san;
    add_extension(cert.get(), ca, NID_subject_alt_name, joined);
  }
  check(X509_sign(cert.get(), native_->key.get(), EVP_sha256()) > 0, "X509_sign");
  return {cert_to_pem(cert.get()), key_to_pem(key.get())};
}

std::string chunk(const std::string& data, const std::string& extension) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return size + extension + "\r\n" + data + "\r\n";
}

std::string RecordedRequest::header(const std::string& name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name)) return value;
  return {};
}

struct TlsTestServer::Native {
  asio::io_context ioc{1};
  ssl::context ctx{ssl::context::tls_server};
  tcp::acceptor acceptor{ioc};
};

TlsTestServer::TlsTestServer(ServerOptions options, StreamScript stream)
    : options_(std::move(options)), stream_(std::move(stream)), native_(std::make_unique<Native>()) {
  ssl::context& ctx = native_->ctx;
  ctx.use_certificate_chain(asio::buffer(options_.identity.cert_pem));
  ctx.use_private_key(asio::buffer(options_.identity.key_pem), ssl::context::pem);
  if (!options_.client_ca_pem.empty()) {
    ctx.add_certificate_authority(asio::buffer(options_.client_ca_pem));
    ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  tcp::endpoint endpoint(asio::ip::make_address(options_.ipv6 ? "::1" : "127.0.0.1"), 0);
  native_->acceptor.open(endpoint.protocol());
  native_->acceptor.bind(endpoint);
  native_->acceptor.listen();
  port_ = native_->acceptor.local_endpoint().port();
  thread_ = std::thread([this] { serve(); });
}

TlsTestServer::~TlsTestServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : connection_fds_) ::shutdown(fd, SHUT_RDWR);
    ::shutdown(native_->acceptor.native_handle(), SHUT_RDWR);
  }
  cv_.notify_all();
  thread_.join();
  for (auto& thread : connection_threads_) thread.join();
}

void TlsTestServer::release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++released_;
  }
  cv_.notify_all();
}

int TlsTestServer::stream_writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_writes_;
}

std::vector<RecordedRequest> TlsTestServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::string TlsTestServer::client_common_name() const {
  std::lock_guard<std::mutex> lock(mu_);
  return client_cn_;
}

std::string TlsTestServer::server_name_indication() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sni_;
}

template <class Stream>
void TlsTestServer::serve_stream(Stream& stream) {
  const StreamScript& script = stream_;
  beast::error_code ec;
  asio::write(stream, asio::buffer(script.head), ec);
  for (const std::string& bytes : script.writes) {
    if (ec) return;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (script.gated) cv_.wait(lock, [this] { return stopping_ || released_ > stream_writes_; });
      if (stopping_) return;
      ++stream_writes_;  // counted before the bytes leave, so a client that saw them sees the count
    }
    asio::write(stream, asio::buffer(bytes), ec);
  }
  if (ec) return;
  switch (script.end) {
    case StreamScript::End::Hang: {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_; });
      return;
    }
    case StreamScript::End::Close:
      // Sends close_notify, then waits for the peer's (or for it to close the connection).
      stream.shutdown(ec);
      return;
    case StreamScript::End::Drop:
      return;  // the socket is closed by the caller, without close_notify
  }
}

template <class Stream>
void TlsTestServer::serve_connection(Stream& stream, int index) {
  beast::error_code ec;
  stream.handshake(ssl::stream_base::server, ec);
  if (ec) return;
  ++handshakes_;
  {
    const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
    std::lock_guard<std::mutex> lock(mu_);
    sni_ = sni != nullptr ? sni : "";
  }
  if (X509* peer = SSL_get_peer_certificate(stream.native_handle())) {
    char cn[256] = {0};
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    X509_free(peer);
    std::lock_guard<std::mutex> lock(mu_);
    client_cn_ = cn;
  }
  beast::flat_buffer buffer;
  for (;;) {
    beast::http::request<beast::http::string_body> req;
    const bool early = buffer.size() != 0 || SSL_has_pending(stream.native_handle()) == 1;
    beast::http::read(stream, buffer, req, ec);
    if (ec) return;
    RecordedRequest recorded{std::string(req.method_string()), std::string(req.target()), {}, req.body(), index, early};
    for (const auto& field : req) recorded.headers.emplace_back(field.name_string(), field.value());
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(std::move(recorded));
    }
    if (req.target().starts_with("/stream")) {
      serve_stream(stream);
      return;
    }
    if (req.target() == "/hang" || options_.mode == ServerMode::HugeBody) {
      if (options_.mode == ServerMode::HugeBody) {
        std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20000000\r\n\r\n";
        asio::write(stream, asio::buffer(head), ec);
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_; });
      return;
    }
    beast::http::response<beast::http::string_body> res{beast::http::status::ok, 11};
    res.set(beast::http::field::content_type, "application/json");
    res.body() = "{\"served\":\"" + std::string(req.target()) + "\"}";
    res.keep_alive(options_.mode != ServerMode::AnnounceClose);
    res.prepare_payload();
    beast::http::write(stream, res, ec);
    if (ec || options_.mode == ServerMode::CloseAfterResponse || options_.mode == ServerMode::AnnounceClose) return;
  }
}

void TlsTestServer::serve() {
  for (int index = 1;; ++index) {
    beast::error_code ec;
    auto socket = std::make_shared<tcp::socket>(native_->ioc);
    native_->acceptor.accept(*socket, ec);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (ec) continue;
      connection_fds_.insert(socket->native_handle());
    }
    ++accepts_;
    connection_threads_.emplace_back([this, socket, index] {
      const int fd = socket->native_handle();
      {
        ssl::stream<tcp::socket&> stream(*socket, native_->ctx);
        serve_connection(stream, index);
      }
      std::lock_guard<std::mutex> lock(mu_);
      connection_fds_.erase(fd);
      // The socket is closed when the last copy of `socket` goes, after the fd was unpublished.
    });
  }
}

}  // namespace manifold::http::testing
