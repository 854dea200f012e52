// BeastTransport implementation. Every network step is an asynchronous Asio/Beast operation run on a
// private io_context until it completes; beast::tcp_stream's expiry (set to the request deadline)
// guarantees completion, so a request cannot outlive its bound. Name resolution, which Asio cannot
// interrupt, runs getaddrinfo (through a synchronous asio resolver) on a detached helper thread that
// the request stops waiting for at the deadline; host names are looked up in /etc/hosts, then DNS
// (/etc/resolv.conf), whatever nsswitch.conf says (see pin_host_resolution). OpenSSL objects are
// owned by asio::ssl::context and beast::ssl_stream (RAII) and are created only when the first
// request is sent; OpenSSL itself is initialised then too, without the node's openssl.cnf (see
// init_openssl). A request is serialised into one buffer by serialize_request (http_wire.h: the bytes Beast's
// request serializer would write, for a quarter of its instructions) and written in one write;
// answers are parsed by Beast's response parser.
#include "k8s/beast_transport.h"

#include <nss.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "k8s/http_wire.h"
#include "util/log.h"

namespace manifold::k8s {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;
using Stream = beast::ssl_stream<beast::tcp_stream>;
using Kind = TransportError::Kind;

/// Thrown inside send() when a reused keep-alive connection turns out to be dead before any byte of
/// the answer arrived; send() then reconnects once.
struct StaleConnection {
  TransportError error;
};

std::string to_ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

/// Errors meaning "the peer went away" rather than "the peer said something wrong".
bool is_connection_loss(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == ssl::error::stream_truncated ||
         ec.category() == asio::error::get_ssl_category();
}

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

}  // namespace

struct BeastTransport::Impl {
  ClusterAuth auth;
  ServerUrl url;
  std::string server;  // url.to_string(), for messages
  // Declaration order matters: the stream must be destroyed before the TLS context and the
  // io_context it is registered with.
  std::unique_ptr<asio::io_context> ioc;
  std::unique_ptr<ssl::context> ctx;
  std::unique_ptr<Stream> stream;
  beast::flat_buffer buffer;
  int connections = 0;

  explicit Impl(ClusterAuth a) : auth(std::move(a)), url(parse_server_url(auth.server)), server(url.to_string()) {}

  [[noreturn]] void fail(Kind kind, const std::string& what) const { throw TransportError(kind, what); }

  [[noreturn]] void config_error(const std::string& what, const beast::error_code& ec) const {
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "Kubernetes TLS configuration for " + server + ": " + what + ": " + ec.message());
  }

  /// Builds the io_context and the TLS context on first use.
  void ensure_initialized() {
    if (!ioc) ioc = std::make_unique<asio::io_context>(1);
    if (ctx) return;
    init_openssl();
    auto c = std::make_unique<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(c->native_handle(), TLS1_2_VERSION);
    // Never let OpenSSL prompt on a terminal for the pass phrase of an encrypted key.
    c->set_password_callback([](std::size_t, ssl::context::password_purpose) { return std::string(); });
    beast::error_code ec;
    if (auth.insecure_skip_tls_verify) {
      c->set_verify_mode(ssl::verify_none);
    } else {
      c->set_verify_mode(ssl::verify_peer);
      if (!auth.ca_pem.empty()) {
        c->add_certificate_authority(asio::buffer(auth.ca_pem), ec);
        if (ec) config_error("cannot load the certificate authority", ec);
      } else {
        util::log_verbose("no certificate authority configured for ", server, "; using the system trust store");
        c->set_default_verify_paths(ec);
        if (ec) config_error("cannot load the system trust store", ec);
      }
    }
    if (!auth.client_cert_pem.empty()) {
      c->use_certificate_chain(asio::buffer(auth.client_cert_pem), ec);
      if (ec) config_error("cannot load the client certificate", ec);
      c->use_private_key(asio::buffer(auth.client_key_pem), ssl::context::pem, ec);
      if ((ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) ||
          (!ec && SSL_CTX_check_private_key(c->native_handle()) != 1))
        throw cni::CniError(
            cni::ErrorCode::InvalidConfig,
            "Kubernetes TLS configuration for " + server + ": the client key does not match the client certificate");
      if (ec) config_error("cannot load the client key (it must be an unencrypted PEM key)", ec);
    }
    ctx = std::move(c);
  }

  /// Runs the event loop until `done`; the tcp_stream expiry bounds every pending operation, and a
  /// last-resort hard stop closes the socket should that ever fail.
  void run_until(const bool& done, SteadyTime deadline) {
    ioc->restart();
    SteadyTime hard_stop = deadline + std::chrono::seconds(1);
    bool forced = false;
    while (!done) {
      std::size_t handled = ioc->run_one_until(hard_stop);
      if (done) break;
      if (handled != 0) continue;
      if (ioc->stopped() || forced)
        throw cni::CniError(cni::ErrorCode::Internal, "HTTPS transport: an operation never completed");
      forced = true;
      if (stream) {
        beast::error_code ignored;
        beast::get_lowest_layer(*stream).socket().close(ignored);
      }
      hard_stop = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
  }

  std::vector<tcp::endpoint> resolve(SteadyTime deadline, std::chrono::milliseconds timeout) {
    if (url.host_is_ip) return {tcp::endpoint(asio::ip::make_address(url.host), url.port)};
    pin_host_resolution();
    auto state = std::make_shared<ResolveState>();
    try {
      std::thread([state, host = url.host, port = std::to_string(url.port)] {
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
      fail(Kind::Resolve, "cannot resolve Kubernetes API server host \"" + url.host + "\": " + e.what());
    }
    std::unique_lock<std::mutex> lock(state->mu);
    if (!state->cv.wait_until(lock, deadline, [&] { return state->done; }))
      fail(Kind::Timeout,
           "resolving Kubernetes API server host \"" + url.host + "\" took longer than " + to_ms(timeout));
    if (!state->error.empty() || state->endpoints.empty())
      fail(Kind::Resolve, "cannot resolve Kubernetes API server host \"" + url.host +
                              "\": " + (state->error.empty() ? std::string("no addresses") : state->error));
    return state->endpoints;
  }

  void close() {
    if (stream) {
      beast::error_code ignored;
      beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(*stream).socket().close(ignored);
      stream.reset();
    }
    buffer.clear();
  }

  /// True when the kept connection can be reused: no buffered leftovers and the server has not
  /// closed it (a zero-length peek means EOF).
  bool connection_usable() {
    if (!stream) return false;
    if (buffer.size() != 0) return false;
    int fd = beast::get_lowest_layer(*stream).socket().native_handle();
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 0);
    if (ready == 0) return true;
    if (ready < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    char byte;
    return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  void connect(SteadyTime deadline, std::chrono::milliseconds timeout) {
    close();
    std::vector<tcp::endpoint> endpoints = resolve(deadline, timeout);
    stream = std::make_unique<Stream>(*ioc, *ctx);
    SSL* ssl_handle = stream->native_handle();
    if (!url.host_is_ip && SSL_set_tlsext_host_name(ssl_handle, url.host.c_str()) != 1)
      fail(Kind::Tls, "cannot set the TLS server name for " + server);
    if (!auth.insecure_skip_tls_verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      int ok = url.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str())
                              : X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), url.host.size());
      if (ok != 1) fail(Kind::Tls, "cannot set up host verification for " + server);
    }

    auto& tcp_layer = beast::get_lowest_layer(*stream);
    tcp_layer.expires_at(deadline);
    bool done = false;
    beast::error_code ec;
    tcp_layer.async_connect(endpoints, [&](const beast::error_code& e, const tcp::endpoint&) {
      ec = e;
      done = true;
    });
    run_until(done, deadline);
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted)
      fail(Kind::Timeout, "connecting to Kubernetes API server " + server + " took longer than " + to_ms(timeout));
    if (ec) fail(Kind::Connect, "cannot connect to Kubernetes API server " + server + ": " + ec.message());
    ++connections;
    beast::error_code ignored;
    tcp_layer.socket().set_option(tcp::no_delay(true), ignored);

    done = false;
    stream->async_handshake(ssl::stream_base::client, [&](const beast::error_code& e) {
      ec = e;
      done = true;
    });
    run_until(done, deadline);
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted)
      fail(Kind::Timeout, "TLS handshake with Kubernetes API server " + server + " took longer than " + to_ms(timeout));
    if (ec) {
      long verify = SSL_get_verify_result(ssl_handle);
      if (verify != X509_V_OK)
        fail(Kind::TlsVerify, "TLS certificate of Kubernetes API server " + server +
                                  " rejected: " + X509_verify_cert_error_string(verify));
      fail(Kind::Tls, "TLS handshake with Kubernetes API server " + server + " failed: " + ec.message());
    }
  }

  /// Writes the request and reads the answer on the current connection. On a reused connection that
  /// fails before any byte of the answer arrived, throws StaleConnection instead of TransportError.
  HttpResponse exchange(const HttpRequest& request, SteadyTime deadline, std::chrono::milliseconds timeout,
                        bool reused) {
    const std::string wire = serialize_request(request, url.authority());

    auto& tcp_layer = beast::get_lowest_layer(*stream);
    tcp_layer.expires_at(deadline);
    bool done = false;
    beast::error_code ec;
    asio::async_write(*stream, asio::buffer(wire), [&](const beast::error_code& e, std::size_t) {
      ec = e;
      done = true;
    });
    run_until(done, deadline);
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted)
      fail(Kind::Timeout,
           "sending the request to Kubernetes API server " + server + " took longer than " + to_ms(timeout));
    if (ec) {
      TransportError error(Kind::Closed, "connection to Kubernetes API server " + server +
                                             " failed while sending the request: " + ec.message());
      if (reused && is_connection_loss(ec)) throw StaleConnection{error};
      throw error;
    }

    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    parser.header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes));
    done = false;
    http::async_read(*stream, buffer, parser, [&](const beast::error_code& e, std::size_t) {
      ec = e;
      done = true;
    });
    run_until(done, deadline);
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted)
      fail(Kind::Timeout, "Kubernetes API server " + server + " did not answer within " + to_ms(timeout));
    if (ec == http::error::body_limit)
      fail(Kind::TooLarge, "the answer of Kubernetes API server " + server + " is larger than " +
                               std::to_string(kMaxBodyBytes >> 20) + " MiB");
    if (ec == http::error::header_limit)
      fail(Kind::TooLarge, "the answer of Kubernetes API server " + server + " has more than " +
                               std::to_string(kMaxHeaderBytes >> 10) + " KiB of headers");
    if (ec && is_connection_loss(ec)) {
      TransportError error(Kind::Closed, "connection to Kubernetes API server " + server + " closed " +
                                             (parser.got_some() ? "in the middle of the answer" : "before an answer") +
                                             ": " + ec.message());
      if (reused && !parser.got_some()) throw StaleConnection{error};
      throw error;
    }
    if (ec) fail(Kind::Protocol, "invalid HTTP answer from Kubernetes API server " + server + ": " + ec.message());

    http::response<http::string_body> res = parser.release();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    for (const auto& field : res)
      out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    out.body = std::move(res.body());
    if (!res.keep_alive()) close();
    return out;
  }

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) {
    validate_request(request);
    const SteadyTime deadline = std::chrono::steady_clock::now() + timeout;
    ensure_initialized();
    try {
      bool reused = connection_usable();
      if (!reused) connect(deadline, timeout);
      try {
        return exchange(request, deadline, timeout, reused);
      } catch (const StaleConnection& stale) {
        util::log_debug("kept connection to ", server, " was closed by the server (", stale.error.msg(),
                        "); reconnecting");
        connect(deadline, timeout);
        return exchange(request, deadline, timeout, false);
      }
    } catch (...) {
      close();  // the connection's state is unknown after any failure
      throw;
    }
  }
};

BeastTransport::BeastTransport(ClusterAuth auth) : impl_(std::make_unique<Impl>(std::move(auth))) {}

BeastTransport::~BeastTransport() = default;

HttpResponse BeastTransport::send(const HttpRequest& request, std::chrono::milliseconds timeout) {
  return impl_->send(request, timeout);
}

bool BeastTransport::tls_initialized() const { return impl_->ctx != nullptr; }

int BeastTransport::connections_opened() const { return impl_->connections; }

}  // namespace manifold::k8s
