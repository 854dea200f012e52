// The real HttpTransport: HTTPS/1.1 to the Kubernetes API server over Boost.Beast, Boost.Asio and
// OpenSSL. One keep-alive connection serves every request of the invocation (reconnecting once when
// the server closed it while idle); a batch of requests is pipelined on it; each streamed exchange (a watch) opens a connection of its own,
// closed when the stream ends, and leaves the kept one alone. The server certificate is verified against the kubeconfig's CA
// only — never the system trust store, which costs ~28 ms to load — with host name or IP address
// verification and SNI for names; client-certificate authentication is supported. All TLS state is
// built at the first send or stream, so an invocation that never talks to Kubernetes never touches
// OpenSSL. Resolution, connect, handshake, write and read are each bounded by the request's deadline;
// a stream's body reads by its idle bound, and its waits are interruptible through on_tick.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/http.h"
#include "http/http_wire.h"
#include "http/kubeconfig.h"
#include "http/tls_session_store.h"

namespace manifold::http {

/// HTTPS transport to one API server. Not thread-safe, except that one stream() may run on another
/// thread than the send() calls (they share only the TLS context); one instance per invocation.
class BeastTransport final : public HttpTransport {
 public:
  /// Largest accepted response body (16 MiB); larger answers fail with TransportError(TooLarge).
  static constexpr std::size_t kMaxBodyBytes = 16u << 20;
  /// Largest accepted response header block (64 KiB).
  static constexpr std::size_t kMaxHeaderBytes = 64u << 10;

  /// Validates the server URL (CniError(InvalidConfig) when invalid). Opens nothing and creates no
  /// TLS state. With `sessions`, TLS sessions are resumed across invocations: the stored session of
  /// this server and client identity is offered, and a full handshake's new session is stored.
  explicit BeastTransport(ClusterAuth auth, std::shared_ptr<TlsSessionStore> sessions = nullptr);
  /// Closes the connection, if any.
  ~BeastTransport() override;
  BeastTransport(const BeastTransport&) = delete;
  BeastTransport& operator=(const BeastTransport&) = delete;

  /// Sends one request within `timeout` (covering resolve, connect, TLS handshake, write and read).
  /// Throws TransportError on failure, CniError(InvalidConfig) when the CA or client certificate
  /// cannot be loaded, CniError(Internal) for a malformed request.
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override;

  /// Pipelines `requests` on the kept connection: all written in one write, the answers read in
  /// order, so the batch costs one round trip. Requests the server left unanswered by closing the
  /// connection after an answer are sent again on a new connection; a kept connection found dead
  /// before its first answer is replaced once; any other failure is the outcome of every request
  /// not answered yet. `timeout` bounds the whole batch. Throws like send() for a malformed request
  /// or credentials that cannot be loaded.
  std::vector<BatchOutcome> send_batch(const std::vector<HttpRequest>& requests,
                                       std::chrono::milliseconds timeout) override;

  /// Streams one exchange on a new connection (HttpTransport::stream): the same TLS verification
  /// and client certificate as send(); headers bounded by kMaxHeaderBytes, a non-2xx body by
  /// kMaxBodyBytes; the connection is closed when this returns or throws. Also throws
  /// CniError(InvalidConfig) and CniError(Internal) as send() does.
  StreamResult stream(const HttpRequest& request, const StreamOptions& options,
                      const std::function<bool(std::string_view)>& on_data) override;

  /// True once the TLS context has been created (after the first send or stream).
  bool tls_initialized() const;
  /// TCP connections opened so far (by send() and by stream()).
  int connections_opened() const;
  /// Handshakes that resumed a stored TLS session so far.
  int resumed_handshakes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The TLS library this binary runs, as it names itself ("OpenSSL 3.0.20 27 Jan 2026"), for
/// `manifold version`: in a static binary it is what security advisories must be checked against.
/// Reads a constant; initialises nothing.
std::string tls_library_version();

}  // namespace manifold::http
