// The node agent's HTTP endpoint: a plain-HTTP/1.1 server, on a loopback address unless told
// otherwise, answering GET /metrics with the metrics registry's text exposition, GET /healthz with
// the agent's liveness and GET /readyz with its readiness. It runs on its own thread with its own
// event loop, so the agent's work never waits for it, and every connection is bounded (request size,
// a short deadline for the request, one for the answer, one request per connection); at the cap on
// open connections the oldest is closed to make room, so idle or slow clients — any local user can
// connect — can never keep a probe out. Stopping is prompt: the event loop is stopped, the thread
// joined and every socket closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/metrics.h"

namespace manifold::agent {

/// What a probe reports: healthy, or the reason it is not (for the caller's logs, never served).
struct ProbeHealth {
  bool ok = true;      ///< healthy
  std::string reason;  ///< why not, when not ok
};

/// The status server's probe callbacks; an unset one always answers healthy.
struct StatusProbes {
  std::function<ProbeHealth()> live;   ///< /healthz: the process itself works (restart it when not)
  std::function<ProbeHealth()> ready;  ///< /readyz: it is in sync with what it depends on
};

/// Bounds of every status server connection.
struct StatusLimits {
  std::size_t max_connections = 64;                 ///< open at once; the oldest goes for a newcomer
  std::chrono::milliseconds read_deadline{400};     ///< to receive the whole request
  std::chrono::milliseconds answer_deadline{1000};  ///< to send the answer and see the client close
};

/// A plain-HTTP/1.1 server on a loopback address answering GET /metrics (the registry's text,
/// Content-Type `text/plain; version=0.0.4; charset=utf-8`), GET /healthz (200 "ok\n" when the
/// liveness callback says healthy, else 503 "unhealthy\n"), GET /readyz (the same from the
/// readiness callback, 503 "not ready\n"), everything else 404 (405 for methods other than GET and
/// HEAD on those paths). The bodies never carry the callbacks' reasons: anyone on the node can read
/// them. Runs on its own thread; the destructor (or stop()) stops it promptly and joins. The
/// callbacks and the registry's render() run on that thread.
class StatusServer {
 public:
  using Health = ProbeHealth;   ///< what a probe reports
  using Probes = StatusProbes;  ///< the probes' callbacks
  using Limits = StatusLimits;  ///< bounds of every connection

  /// Binds `address` ("127.0.0.1:9555", "[::1]:9555", port 0 = ephemeral) and starts serving.
  /// Throws cni::CniError(InvalidConfig) for an unparsable address, or a non-loopback one unless
  /// `allow_non_loopback`, and CniError(Internal) with the system's reason when the address cannot be
  /// bound (e.g. the port is in use). `metrics` must outlive the server.
  StatusServer(const std::string& address, const MetricsRegistry& metrics, Probes probes,
               bool allow_non_loopback = false, Limits limits = Limits());
  /// Stops serving and joins the thread.
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  /// The port actually bound.
  std::uint16_t port() const;
  /// Stops serving and joins the thread (idempotent; not to be called from the health callback).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace manifold::agent
