// The CNI side of the agent relay: an HttpTransport that hands each batch of API requests to the node
// agent over its Unix socket (relay/relay_protocol.h) and, whenever the agent is not there to take it,
// sends it directly instead. "Not there" is anything that proves nothing but GETs (harmless to send
// again) was sent upstream: no socket, connection refused, a socket or a peer that is not root's
// (relay_trust.h: checked before anything is sent), the request frame not delivered, or the agent's
// refusal (another API server, a call it does not relay, a pod not of its node, its credentials
// unusable, busy, an answer that would not fit). From then on the invocation goes direct.
// Once a frame is delivered, a missing or garbled answer is not a reason to send the same requests
// again behind the agent's back: each request then fails as a closed connection would (retryable,
// so the API client's retry policy decides, over the direct path). The Authorization header never
// crosses the socket.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "http/http.h"
#include "relay/relay_trust.h"

namespace manifold::relay {

/// HttpTransport through the node agent's relay, with the direct transport as the fallback.
class RelayTransport final : public http::HttpTransport {
 public:
  /// Opens the direct transport, on first need only.
  using DirectFactory = std::function<std::unique_ptr<http::HttpTransport>()>;
  /// Relays to the agent listening on `socket_path` the requests meant for the API server `server`
  /// (its URL), trusting the socket and its peer as `trust` says (null: OwnerTrust of root), telling
  /// the agent the UID of the pod the call was started for (`pod_uid`, "" when unknown: the agent
  /// then answers no lookup from memory). Opens nothing yet.
  RelayTransport(std::string socket_path, std::string server, DirectFactory direct,
                 std::shared_ptr<AgentTrust> trust = nullptr, std::string pod_uid = {});
  ~RelayTransport() override;

  /// One request: relay_batch of one.
  http::HttpResponse send(const http::HttpRequest& request, std::chrono::milliseconds timeout) override;
  /// The batch through the agent (one local round trip; the agent pipelines it upstream), else
  /// directly; see the header comment for which failures fall back.
  std::vector<http::BatchOutcome> send_batch(const std::vector<http::HttpRequest>& requests,
                                             std::chrono::milliseconds timeout) override;
  /// Always direct: the relay carries no streams.
  http::StreamResult stream(const http::HttpRequest& request, const http::StreamOptions& options,
                            const std::function<bool(std::string_view)>& on_data) override;

  /// Batches the agent answered so far.
  int relayed_batches() const { return relayed_; }
  /// True once the invocation went direct (no agent, or it refused).
  bool went_direct() const { return !use_agent_; }

 private:
  http::HttpTransport& direct();
  std::vector<http::BatchOutcome> fall_back(const std::string& why, const std::vector<http::HttpRequest>& requests,
                                            std::chrono::milliseconds timeout);

  std::string socket_path_;
  std::string server_;
  DirectFactory open_direct_;
  std::shared_ptr<AgentTrust> trust_;
  std::string pod_uid_;
  std::unique_ptr<http::HttpTransport> direct_;
  bool use_agent_ = true;
  int relayed_ = 0;
};

}  // namespace manifold::relay
