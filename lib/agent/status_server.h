// The node agent's HTTP endpoint: a plain-HTTP/1.1 server, on a loopback address unless told
// otherwise, answering GET /metrics with the metrics registry's text exposition and GET /healthz with
// the agent's health. It runs on its own thread with its own event loop, so the agent's work never
// waits for it, and every connection is bounded (request size, a deadline for the whole exchange, a
// cap on concurrent connections, one request per connection), so a slow or hostile client cannot
// hold it. Stopping is prompt: the event loop is stopped, the thread joined and every socket closed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/metrics.h"

namespace manifold::agent {

/// A plain-HTTP/1.1 server on a loopback address answering GET /metrics (the registry's text,
/// Content-Type `text/plain; version=0.0.4; charset=utf-8`), GET /healthz (200 "ok\n" when the
/// health callback says healthy, else 503 with its reason), everything else 404 (405 for methods
/// other than GET and HEAD on those two paths). Runs on its own thread; the destructor (or stop())
/// stops it promptly and joins. The health callback and the registry's render() run on that thread.
class StatusServer {
 public:
  /// What /healthz reports: healthy, or the reason it is not.
  struct Health {
    bool ok = true;      ///< healthy
    std::string reason;  ///< why not, when not ok
  };

  /// Binds `address` ("127.0.0.1:9555", "[::1]:9555", port 0 = ephemeral) and starts serving.
  /// Throws cni::CniError(InvalidConfig) for an unparsable address, or a non-loopback one unless
  /// `allow_non_loopback`, and CniError(Internal) with the system's reason when the address cannot be
  /// bound (e.g. the port is in use). `metrics` must outlive the server.
  StatusServer(const std::string& address, const MetricsRegistry& metrics, std::function<Health()> health,
               bool allow_non_loopback = false);
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
