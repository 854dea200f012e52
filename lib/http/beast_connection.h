// Internal to the Beast transport (beast_transport.cpp): opening TLS connections to the API server
// and running one asynchronous operation at a time to completion within a bound. TlsConnector owns
// what every connection of one BeastTransport shares (the parsed server URL, the credentials and the
// OpenSSL context, built on first use) and opens connections on any io_context, so that send()'s
// kept-alive connection and each stream()'s connection of its own are set up by the same code: CA and
// host name or IP verification, SNI, client certificate. run_until is the bounded event loop both
// use; for a stream it also calls the caller's on_tick hook while it waits and cancels the pending
// operation (and waits for its handler) when the hook asks to stop. Handlers only store their result
// in an OpResult; nothing is thrown from inside Asio.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/http.h"
#include "http/kubeconfig.h"
#include "http/tls_resumption.h"
#include "http/tls_session_store.h"

namespace manifold::http::beast_detail {

/// The TLS-over-TCP stream every connection uses.
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
/// A point in time on the monotonic clock.
using SteadyTime = std::chrono::steady_clock::time_point;

/// "<n> ms", for messages.
std::string to_ms(std::chrono::milliseconds d);

/// True for errors meaning "the peer went away" rather than "the peer said something wrong".
bool is_connection_loss(const boost::system::error_code& ec);

/// Thrown by run_until and TlsConnector::connect when on_tick returned false; by then no operation
/// is pending any more.
struct StopRequested {};

/// Calls a stream's on_tick hook at least every `tick`.
class Ticker {
 public:
  /// Ticks for `options` (which must outlive the ticker); the first tick is due one period from now.
  explicit Ticker(const StreamOptions& options);
  /// When the next tick is due.
  SteadyTime next() const { return next_; }
  /// Runs on_tick (true when unset) and schedules the next tick one period from now.
  bool fire();

 private:
  const StreamOptions& options_;
  std::chrono::milliseconds period_;
  SteadyTime next_;
};

/// Completion record of one asynchronous operation: its handler (Record) only stores into it.
struct OpResult {
  bool done = false;
  boost::system::error_code ec;
  std::size_t bytes = 0;
};

/// Completion handler for every operation signature used here: stores the outcome, throws nothing.
struct Record {
  std::shared_ptr<OpResult> op;
  /// Handshake completion.
  void operator()(const boost::system::error_code& ec) const noexcept { finish(ec, 0); }
  /// Read and write completion.
  void operator()(const boost::system::error_code& ec, std::size_t n) const noexcept { finish(ec, n); }
  /// Connect completion.
  void operator()(const boost::system::error_code& ec, const boost::asio::ip::tcp::endpoint&) const noexcept {
    finish(ec, 0);
  }
  /// Stores the outcome.
  void finish(const boost::system::error_code& ec, std::size_t n) const noexcept {
    op->ec = ec;
    op->bytes = n;
    op->done = true;
  }
};

/// Runs `ioc` until `op` is done. `deadline` is the bound the operation's own expiry enforces; a
/// second later the socket of `stream` (may be null) is closed as a last resort, and a second after
/// that CniError(Internal) is thrown. With a `ticker`, on_tick runs whenever due; when it returns
/// false (or throws) the operation is cancelled and its handler awaited, then StopRequested (or the
/// exception) is thrown.
void run_until(boost::asio::io_context& ioc, TlsStream* stream, const OpResult& op, SteadyTime deadline,
               Ticker* ticker);

/// Closes the socket of `stream`, cancelling its pending operations, and runs `ioc` (for a second at
/// most) until `op` is done.
void cancel_and_wait(boost::asio::io_context& ioc, TlsStream& stream, const OpResult& op) noexcept;

/// Opens verified TLS connections to one API server. connect() may run on several threads at once.
class TlsConnector {
 public:
  /// Validates the server URL (CniError(InvalidConfig) when invalid); creates no TLS state. With
  /// `sessions`, TLS sessions are resumed across invocations (tls_resumption.h).
  TlsConnector(ClusterAuth auth, std::shared_ptr<TlsSessionStore> sessions);
  /// The parsed server URL.
  const ServerUrl& url() const { return url_; }
  /// The server URL as text, for messages.
  const std::string& server() const { return server_; }
  /// Creates the OpenSSL context on first use. Throws CniError(InvalidConfig) when the CA or the
  /// client certificate cannot be loaded. When a stored session will be offered, the CA is loaded
  /// only if the server declines it (a full handshake needs it; a resumed one verifies no chain).
  void ensure_initialized();
  /// Stores the session a full handshake of this invocation received (best effort, once).
  void persist_session() { resumption_.persist(); }
  /// Handshakes that resumed a stored session so far.
  int resumed_handshakes() const { return resumption_.resumed(); }
  /// True once the OpenSSL context exists.
  bool initialized() const { return initialized_.load(); }
  /// TCP connections opened so far.
  int connections() const { return connections_.load(); }
  /// Resolves the host, connects and completes the TLS handshake on `ioc` before `deadline`
  /// (`timeout` is its length, for messages). Throws TransportError, or StopRequested when `ticker`
  /// (may be null) says stop. Requires ensure_initialized().
  std::unique_ptr<TlsStream> connect(boost::asio::io_context& ioc, SteadyTime deadline,
                                     std::chrono::milliseconds timeout, Ticker* ticker);

 private:
  std::vector<boost::asio::ip::tcp::endpoint> resolve(SteadyTime deadline, std::chrono::milliseconds timeout,
                                                      Ticker* ticker);
  void set_up_verification(TlsStream& stream);
  void handshake(boost::asio::io_context& ioc, TlsStream& stream, SteadyTime deadline,
                 std::chrono::milliseconds timeout, Ticker* ticker);
  [[noreturn]] void config_error(const std::string& what, const boost::system::error_code& ec) const;
  void load_trust(boost::asio::ssl::context& ctx) const;
  bool load_deferred_trust() noexcept;
  static int verify_with_deferred_trust(X509_STORE_CTX* store_ctx, void* arg) noexcept;

  ClusterAuth auth_;
  ServerUrl url_;
  std::string server_;
  std::once_flag init_once_;
  TlsResumption resumption_;  // declared before ctx_, whose callbacks use it, so it outlives ctx_
  std::mutex trust_mu_;
  bool trust_loaded_ = false;
  std::string trust_error_;
  std::unique_ptr<boost::asio::ssl::context> ctx_;
  std::atomic<bool> initialized_{false};
  std::atomic<int> connections_{0};
};

}  // namespace manifold::http::beast_detail
