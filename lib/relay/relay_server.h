// The node agent's API relay: a Unix socket (root-only) on which CNI invocations on this node hand
// over their Kubernetes API requests, which the agent sends on kept-alive HTTPS connections of its
// own (TLS already set up, sessions warm), authenticated with its own credentials. A CNI call then
// pays a local socket round trip instead of a TLS context and handshake. Each connection carries one
// exchange (relay/relay_protocol.h). The agent answers only a peer whose uid is allowed (root), only
// for its own API server, only the calls of relay_policy.h and only for pods of its own node
// (relay_scope.h); anything else gets a refusal, which tells the client that nothing but GETs was
// sent so it may go to the API server directly. An exchange of lookups that the agent's caches can
// answer (relay_answers.h) is answered from memory, after the same checks, without going upstream.
// Connections are bounded in number (a refusal past the cap), in
// size, in time and in memory: frames are read as their bytes arrive, all exchanges together hold at
// most max_buffered_bytes of frames, and an answer stops at the client's frame limit
// (relay_exchange.h). stop() ends every exchange in flight within its time bound, joins every thread
// and removes the socket file it created.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "http/http.h"
#include "relay/relay_answers.h"
#include "relay/relay_scope.h"

namespace manifold::relay {

/// Settings of the relay.
struct RelayServerOptions {
  std::string socket_path = "/run/manifold/agent.sock";  ///< created with mode 0600 (its directory 0700 when made)
  std::string server;                ///< the agent's API server (ServerUrl::to_string()); other servers are refused
  uid_t allowed_uid = 0;             ///< the only peer uid served (SO_PEERCRED)
  std::size_t max_connections = 32;  ///< exchanges at once; past it, a refusal
  std::chrono::milliseconds request_read{5000};   ///< bound of reading a request frame after accept
  std::chrono::milliseconds max_exchange{30000};  ///< longest upstream time granted to one exchange
  std::string node_name;                          ///< this node: only its pods are served ("" serves none)
  std::shared_ptr<RelayScope> scope;              ///< which exchanges are served; null: a NodeScope of node_name
  /// Bytes of request frames being read and answers being built, all exchanges together; past it, a
  /// refusal (two answers of the client's largest size, and many ordinary exchanges at once).
  std::size_t max_buffered_bytes = 16u << 20;
  /// Answers exchanges of lookups from memory before anything goes upstream (null: none do).
  std::shared_ptr<LocalAnswers> answers;
  std::size_t wave = 8;            ///< most requests of an exchange in flight upstream at once
  std::size_t max_in_flight = 16;  ///< most requests of all exchanges in flight upstream at once
};

/// Where the relay counts its exchanges (the agent exports the counts as metrics: agent/metrics.h).
/// Called from the relay's threads.
class RelayCounters {
 public:
  virtual ~RelayCounters() = default;
  /// An exchange whose requests went upstream.
  virtual void answered() = 0;
  /// An exchange refused (nothing sent upstream but GETs).
  virtual void refused() = 0;
};

/// The relay: serves until stop() or destruction.
class RelayServer {
 public:
  /// Opens an upstream transport (kept and reused; one per concurrent exchange).
  using TransportFactory = std::function<std::unique_ptr<http::HttpTransport>()>;
  /// The agent's `Authorization` header value for the next request ("" for none, e.g. client
  /// certificates); throws cni::CniError when its credentials cannot be read.
  using Authorization = std::function<std::string()>;

  /// Binds the socket and starts serving on a thread of its own. A stale socket file left by a
  /// previous agent is replaced; throws cni::CniError(InvalidConfig) when the path is something
  /// other than a socket, or another process is serving it, and CniError(Internal) with the
  /// system's reason when it cannot be created. `counters` must outlive the server.
  RelayServer(RelayServerOptions options, TransportFactory upstream, Authorization authorization,
              RelayCounters& counters);
  /// stop().
  ~RelayServer();
  RelayServer(const RelayServer&) = delete;
  RelayServer& operator=(const RelayServer&) = delete;
  /// Stops accepting, cuts every exchange short (an upstream request in flight ends within its
  /// time bound), joins every thread and removes the socket file (idempotent).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace manifold::relay
