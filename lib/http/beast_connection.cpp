// TLS connections for the Beast transport. Name resolution, which Asio cannot interrupt, runs
// getaddrinfo (through a synchronous asio resolver) on a detached helper thread that the caller stops
// waiting for at the deadline; host names are looked up in /etc/hosts, then DNS (/etc/resolv.conf),
// whatever nsswitch.conf says (see pin_host_resolution). OpenSSL objects are owned by
// asio::ssl::context and beast::ssl_stream (RAII) and are created only when the first connection is
// needed; OpenSSL itself is initialised then too, without the node's openssl.cnf (see init_openssl).
// The server certificate is verified against the kubeconfig's CA only — never the system trust
// store, which costs ~28 ms to load — with host name or IP address verification and SNI for names.
#include "http/beast_connection.h"

#include <nss.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/beast/http/error.hpp>
#include <condition_variable>
#include <thread>

#include "util/log.h"

namespace manifold::http::beast_detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Kind = TransportError::Kind;

/// Pins host-name lookups to glibc's built-in "files" (/etc/hosts) and "dns" (/etc/resolv.conf)
/// services, ignoring the hosts line of nsswitch.conf. Any other NSS service listed there (mdns,
/// resolve, myhostname, sss, ldap...) is a shared library that glibc would dlopen: into the static
/// release binary that means loading the node's own, possibly different, glibc, which is not
/// supported. Pinning makes resolution identical in every build and on every node; systemd-resolved
/// keeps working through its DNS stub listed in resolv.conf. Runs once, before the first lookup.
void pin_host_resolution() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (__nss_configure_lookup("hosts", "files dns") != 0)
      util::log_warning("cannot restrict host name resolution to /etc/hosts and DNS; using nsswitch.conf");
  });
}

/// Initialises OpenSSL once, before the first TLS object, the way a short-lived plugin wants it:
/// without reading the node's openssl.cnf (its providers, engines and policy includes belong to the
/// node's own OpenSSL, not to the one linked into the static binary; manifold sets its own policy:
/// TLS 1.2 or later, the kubeconfig's CA) and without the atexit clean-up, which frees memory the
/// kernel reclaims anyway. Together they cost ~2.1M instructions (about 0.5 ms) per invocation.
void init_openssl() {
  static std::once_flag once;
  std::call_once(once, [] { OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT, nullptr); });
}

/// Result slot of one asynchronous resolution running on a helper thread.
struct ResolveState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<tcp::endpoint> endpoints;
  std::string error;
};

[[noreturn]] void fail(Kind kind, const std::string& what) { throw TransportError(kind, what); }

bool timed_out(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == asio::error::operation_aborted;
}

}  // namespace

std::string to_ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

bool is_connection_loss(const beast::error_code& ec) {
  return ec == beast::http::error::end_of_stream || ec == beast::http::error::partial_message ||
         ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == ssl::error::stream_truncated ||
         ec.category() == asio::error::get_ssl_category();
}

Ticker::Ticker(const StreamOptions& options)
    : options_(options),
      period_(std::max(options.tick, std::chrono::milliseconds(1))),
      next_(std::chrono::steady_clock::now() + period_) {}

bool Ticker::fire() {
  next_ = std::chrono::steady_clock::now() + period_;
  return !options_.on_tick || options_.on_tick();
}

void cancel_and_wait(asio::io_context& ioc, TlsStream& stream, const OpResult& op) noexcept {
  beast::get_lowest_layer(stream).close();
  try {
    ioc.restart();
    const SteadyTime limit = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!op.done && ioc.run_one_until(limit) != 0) {}
  } catch (...) {
    // Handlers here only store results; nothing else can throw.
  }
}

void run_until(asio::io_context& ioc, TlsStream* stream, const OpResult& op, SteadyTime deadline, Ticker* ticker) {
  ioc.restart();
  SteadyTime hard_stop = deadline + std::chrono::seconds(1);
  bool forced = false;
  while (!op.done) {
    const SteadyTime now = std::chrono::steady_clock::now();
    if (ticker && now >= ticker->next()) {
      bool go_on = false;
      try {
        go_on = ticker->fire();
      } catch (...) {
        if (stream) cancel_and_wait(ioc, *stream, op);
        throw;
      }
      if (!go_on) {
        if (stream) cancel_and_wait(ioc, *stream, op);
        throw StopRequested{};
      }
      continue;
    }
    if (now >= hard_stop) {
      if (forced) throw cni::CniError(cni::ErrorCode::Internal, "HTTPS transport: an operation never completed");
      forced = true;
      if (stream) {
        beast::error_code ignored;
        beast::get_lowest_layer(*stream).socket().close(ignored);
      }
      hard_stop = now + std::chrono::seconds(1);
    }
    const SteadyTime wake = ticker ? std::min(hard_stop, ticker->next()) : hard_stop;
    if (ioc.run_one_until(wake) == 0 && ioc.stopped() && !op.done)
      throw cni::CniError(cni::ErrorCode::Internal, "HTTPS transport: an operation never completed");
  }
}

TlsConnector::TlsConnector(ClusterAuth auth, std::shared_ptr<TlsSessionStore> sessions)
    : auth_(std::move(auth)),
      url_(parse_server_url(auth_.server)),
      server_(url_.to_string()),
      resumption_(auth_, std::move(sessions)) {}

void TlsConnector::config_error(const std::string& what, const beast::error_code& ec) const {
  throw cni::CniError(cni::ErrorCode::InvalidConfig,
                      "Kubernetes TLS configuration for " + server_ + ": " + what + ": " + ec.message());
}

void TlsConnector::load_trust(ssl::context& ctx) const {
  beast::error_code ec;
  if (!auth_.ca_pem.empty()) {
    ctx.add_certificate_authority(asio::buffer(auth_.ca_pem), ec);
    if (ec) config_error("cannot load the certificate authority", ec);
  } else {
    util::log_verbose("no certificate authority configured for ", server_, "; using the system trust store");
    ctx.set_default_verify_paths(ec);
    if (ec) config_error("cannot load the system trust store", ec);
  }
}

bool TlsConnector::load_deferred_trust() noexcept {
  std::lock_guard lock(trust_mu_);
  if (!trust_loaded_ && trust_error_.empty()) {
    try {
      load_trust(*ctx_);
      trust_loaded_ = true;
    } catch (const std::exception& e) {
      trust_error_ = e.what();
    }
  }
  return trust_loaded_;
}

int TlsConnector::verify_with_deferred_trust(X509_STORE_CTX* store_ctx, void* arg) noexcept {
  // Reached only when the server presented its certificate: it declined the stored session.
  if (!static_cast<TlsConnector*>(arg)->load_deferred_trust()) return 0;
  return X509_verify_cert(store_ctx);
}

void TlsConnector::ensure_initialized() {
  // A throwing call leaves the flag unset, so the next connection tries (and reports) again.
  std::call_once(init_once_, [this] {
    init_openssl();
    auto c = std::make_unique<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(c->native_handle(), TLS1_2_VERSION);
    // Never let OpenSSL prompt on a terminal for the pass phrase of an encrypted key.
    c->set_password_callback([](std::size_t, ssl::context::password_purpose) { return std::string(); });
    beast::error_code ec;
    const bool resuming = resumption_.load();
    if (auth_.insecure_skip_tls_verify) {
      c->set_verify_mode(ssl::verify_none);
    } else {
      c->set_verify_mode(ssl::verify_peer);
      // The stored session is bound to these CA bytes, which loaded when it was made.
      if (resuming && !auth_.ca_pem.empty())
        SSL_CTX_set_cert_verify_callback(c->native_handle(), &TlsConnector::verify_with_deferred_trust, this);
      else
        load_trust(*c);
    }
    if (!auth_.client_cert_pem.empty()) {
      c->use_certificate_chain(asio::buffer(auth_.client_cert_pem), ec);
      if (ec) config_error("cannot load the client certificate", ec);
      c->use_private_key(asio::buffer(auth_.client_key_pem), ssl::context::pem, ec);
      if ((ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) ||
          (!ec && SSL_CTX_check_private_key(c->native_handle()) != 1))
        throw cni::CniError(
            cni::ErrorCode::InvalidConfig,
            "Kubernetes TLS configuration for " + server_ + ": the client key does not match the client certificate");
      if (ec) config_error("cannot load the client key (it must be an unencrypted PEM key)", ec);
    }
    resumption_.capture(c->native_handle());
    ctx_ = std::move(c);
    initialized_ = true;
  });
}

std::vector<tcp::endpoint> TlsConnector::resolve(SteadyTime deadline, std::chrono::milliseconds timeout,
                                                 Ticker* ticker) {
  if (url_.host_is_ip) return {tcp::endpoint(asio::ip::make_address(url_.host), url_.port)};
  pin_host_resolution();
  auto state = std::make_shared<ResolveState>();
  try {
    std::thread([state, host = url_.host, port = std::to_string(url_.port)] {
      asio::io_context local;
      tcp::resolver resolver(local);
      beast::error_code ec;
      auto results = resolver.resolve(host, port, tcp::resolver::numeric_service, ec);
      std::lock_guard<std::mutex> lock(state->mu);
      if (ec) state->error = ec.message();
      for (const auto& entry : results) state->endpoints.push_back(entry.endpoint());
      state->done = true;
      state->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    fail(Kind::Resolve, "cannot resolve Kubernetes API server host \"" + url_.host + "\": " + e.what());
  }
  std::unique_lock<std::mutex> lock(state->mu);
  while (!state->cv.wait_until(lock, ticker ? std::min(deadline, ticker->next()) : deadline,
                               [&] { return state->done; })) {
    if (std::chrono::steady_clock::now() >= deadline)
      fail(Kind::Timeout,
           "resolving Kubernetes API server host \"" + url_.host + "\" took longer than " + to_ms(timeout));
    lock.unlock();
    if (ticker && !ticker->fire()) throw StopRequested{};
    lock.lock();
  }
  if (!state->error.empty() || state->endpoints.empty())
    fail(Kind::Resolve, "cannot resolve Kubernetes API server host \"" + url_.host +
                            "\": " + (state->error.empty() ? std::string("no addresses") : state->error));
  return state->endpoints;
}

void TlsConnector::set_up_verification(TlsStream& stream) {
  SSL* ssl_handle = stream.native_handle();
  if (!url_.host_is_ip && SSL_set_tlsext_host_name(ssl_handle, url_.host.c_str()) != 1)
    fail(Kind::Tls, "cannot set the TLS server name for " + server_);
  if (auth_.insecure_skip_tls_verify) return;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  int ok = url_.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, url_.host.c_str())
                           : X509_VERIFY_PARAM_set1_host(param, url_.host.c_str(), url_.host.size());
  if (ok != 1) fail(Kind::Tls, "cannot set up host verification for " + server_);
}

std::unique_ptr<TlsStream> TlsConnector::connect(asio::io_context& ioc, SteadyTime deadline,
                                                 std::chrono::milliseconds timeout, Ticker* ticker) {
  std::vector<tcp::endpoint> endpoints = resolve(deadline, timeout, ticker);
  auto stream = std::make_unique<TlsStream>(ioc, *ctx_);
  set_up_verification(*stream);
  resumption_.offer(stream->native_handle());
  auto& tcp_layer = beast::get_lowest_layer(*stream);
  tcp_layer.expires_at(deadline);
  auto op = std::make_shared<OpResult>();
  tcp_layer.async_connect(endpoints, Record{op});
  run_until(ioc, stream.get(), *op, deadline, ticker);
  if (timed_out(op->ec))
    fail(Kind::Timeout, "connecting to Kubernetes API server " + server_ + " took longer than " + to_ms(timeout));
  if (op->ec) fail(Kind::Connect, "cannot connect to Kubernetes API server " + server_ + ": " + op->ec.message());
  ++connections_;
  beast::error_code ignored;
  tcp_layer.socket().set_option(tcp::no_delay(true), ignored);
  handshake(ioc, *stream, deadline, timeout, ticker);
  return stream;
}

void TlsConnector::handshake(asio::io_context& ioc, TlsStream& stream, SteadyTime deadline,
                             std::chrono::milliseconds timeout, Ticker* ticker) {
  auto op = std::make_shared<OpResult>();
  stream.async_handshake(ssl::stream_base::client, Record{op});
  run_until(ioc, &stream, *op, deadline, ticker);
  if (timed_out(op->ec))
    fail(Kind::Timeout, "TLS handshake with Kubernetes API server " + server_ + " took longer than " + to_ms(timeout));
  if (op->ec) {
    {
      std::lock_guard lock(trust_mu_);
      if (!trust_error_.empty()) throw cni::CniError(cni::ErrorCode::InvalidConfig, trust_error_);
    }
    long verify = SSL_get_verify_result(stream.native_handle());
    if (verify != X509_V_OK)
      fail(Kind::TlsVerify, "TLS certificate of Kubernetes API server " + server_ +
                                " rejected: " + X509_verify_cert_error_string(verify));
    fail(Kind::Tls, "TLS handshake with Kubernetes API server " + server_ + " failed: " + op->ec.message());
  }
  resumption_.handshake_done(stream.native_handle());
}

}  // namespace manifold::http::beast_detail
