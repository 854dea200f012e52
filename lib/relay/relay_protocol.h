// The agent relay's wire protocol: how a CNI invocation hands its Kubernetes API requests to the
// node agent over a Unix socket, so that they travel on the agent's warm, kept-alive HTTPS connection
// instead of a TLS connection of the invocation's own. One connection carries one exchange: the client
// writes one request frame (the batch of HTTP requests, the API server they are meant for and the
// time they may take), the agent writes one answer frame (one outcome per request, in order, or a
// refusal: nothing was sent upstream). A frame is a 4-byte big-endian length and that many bytes of
// JSON. No credentials ever cross the socket: the client leaves its Authorization header out and the
// agent authenticates with its own. Frame I/O is bounded by a deadline and by size limits on both
// sides.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "http/http.h"

namespace manifold::relay {

/// Largest request frame accepted (a pod status PUT with its events fits many times over).
inline constexpr std::size_t kMaxRequestFrame = 4u << 20;
/// Largest answer frame accepted (16 pipelined answers of the transport's largest body would not
/// fit; a pod and its NADs do, many times over).
inline constexpr std::size_t kMaxAnswerFrame = 48u << 20;
/// Most requests in one frame.
inline constexpr std::size_t kMaxRequests = 256;
/// The protocol's version, sent in every frame; a frame of another version is refused.
inline constexpr int kVersion = 1;

/// What a client asks of the agent.
struct RelayRequest {
  std::string server;                       ///< the API server the requests are for (ServerUrl::to_string())
  std::chrono::milliseconds timeout;        ///< bound of the whole batch, as HttpTransport::send_batch's
  std::vector<http::HttpRequest> requests;  ///< without an Authorization header
};

/// What the agent answers: a refusal (nothing sent upstream), or one outcome per request.
struct RelayAnswer {
  std::string refused;                       ///< why the agent declined the whole request; "" when it did not
  std::vector<http::BatchOutcome> outcomes;  ///< one per request, in order, when not refused
};

/// The JSON text of a request frame's payload.
std::string encode_request(const RelayRequest& request);
/// Parses a request frame's payload. Throws cni::CniError(Decoding) naming what is wrong: not JSON,
/// another version, a missing or mistyped field, no requests or more than kMaxRequests, a timeout
/// outside 1 ms – 10 min.
RelayRequest decode_request(const std::string& payload);
/// The JSON text of an answer frame's payload.
std::string encode_answer(const RelayAnswer& answer);
/// Parses an answer frame's payload for a request of `expected` requests. Throws
/// cni::CniError(Decoding) when it is not a refusal or exactly `expected` well-formed outcomes.
RelayAnswer decode_answer(const std::string& payload, std::size_t expected);

/// Writes one frame (length prefix and payload) to the stream socket `fd` before `deadline`. Throws
/// TransportError: Timeout when the deadline passes, Closed when the peer is gone.
void write_frame(int fd, std::string_view payload, std::chrono::steady_clock::time_point deadline);
/// Reads one frame of at most `max_bytes` from `fd` before `deadline`. Throws TransportError:
/// Timeout when the deadline passes, Closed when the peer closes first (before or within the frame),
/// TooLarge when the announced length exceeds `max_bytes`.
std::string read_frame(int fd, std::size_t max_bytes, std::chrono::steady_clock::time_point deadline);

}  // namespace manifold::relay
