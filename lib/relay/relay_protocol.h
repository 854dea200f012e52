// The agent relay's wire protocol: how a CNI invocation hands its Kubernetes API requests to the
// node agent over a Unix socket, so that they travel on the agent's warm, kept-alive HTTPS connection
// instead of a TLS connection of the invocation's own. One connection carries one exchange: the client
// writes one request frame (the batch of HTTP requests, the API server they are meant for, the time
// they may take and, optionally, the UID of the pod the call was started for), the agent writes one
// answer frame (one outcome per request, in order, or a
// refusal: nothing that changes state was sent upstream — at most GETs, which the client may send
// again directly). A frame is a 4-byte big-endian length and that many bytes of
// JSON. No credentials ever cross the socket: the client leaves its Authorization header out and the
// agent authenticates with its own. Frame I/O is bounded by a deadline and by size limits on both
// sides; a frame is read in chunks, so the memory it takes grows with the bytes received, never with
// the length a peer announces, and a request frame's shape (requests, headers, JSON values) is capped
// at what a CNI call sends, with margin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "http/http.h"

namespace manifold::relay {

/// Largest request frame accepted. The largest a CNI call sends is the status PUT: the pod (the API
/// server stores objects of at most 1.5 MiB) with its events behind it. A larger frame is refused,
/// and the call goes directly.
inline constexpr std::size_t kMaxRequestFrame = 2u << 20;
/// Largest answer frame the client accepts, and where the agent stops its answer: a pod and its
/// NADs, or a status PUT's pod and its events, fit many times over.
inline constexpr std::size_t kMaxAnswerFrame = 8u << 20;
/// Most requests in one frame: a CNI call sends one GET per distinct NAD of its pod, or the status
/// PUT with one event per attachment; a pod with more networks than this goes directly.
inline constexpr std::size_t kMaxRequests = 64;
/// Most headers of one request (the client sends Accept, Content-Type and User-Agent).
inline constexpr std::size_t kMaxHeaders = 8;
/// Most bytes of one request's header names and values together.
inline constexpr std::size_t kMaxHeaderBytes = 4096;
/// Longest request target (the API client's URL limit).
inline constexpr std::size_t kMaxTargetBytes = 2048;
/// Longest podUid accepted (a UID is 36 characters).
inline constexpr std::size_t kMaxPodUid = 128;
/// Most JSON values (objects, arrays, strings, numbers…) in a request frame: what kMaxRequests
/// requests of kMaxHeaders headers hold, so a frame of tiny values cannot build a huge document.
inline constexpr std::size_t kMaxFrameValues = 16 + kMaxRequests * (8 + 3 * kMaxHeaders);
/// The protocol's version, sent in every frame; a frame of another version is refused.
inline constexpr int kVersion = 1;

/// What a client asks of the agent.
struct RelayRequest {
  std::string server;                       ///< the API server the requests are for (ServerUrl::to_string())
  std::chrono::milliseconds timeout;        ///< bound of the whole batch, as HttpTransport::send_batch's
  std::vector<http::HttpRequest> requests;  ///< without an Authorization header
  /// The UID of the pod the CNI call was started for (K8S_POD_UID; "" when unknown), sent as the
  /// optional field "podUid": an agent with caches answers the pod's lookups from memory only for
  /// that UID. An agent that does not know the field ignores it and forwards as before.
  std::string pod_uid;
};

/// What the agent answers: a refusal (nothing sent upstream but GETs), or one outcome per request.
struct RelayAnswer {
  std::string refused;                       ///< why the agent declined the whole request; "" when it did not
  std::vector<http::BatchOutcome> outcomes;  ///< one per request, in order, when not refused
};

/// Bytes the relay may hold at once for all its exchanges (request frames being read, answers being
/// built). Thread-safe.
class ByteBudget {
 public:
  /// A budget of `limit` bytes.
  explicit ByteBudget(std::size_t limit) : limit_(limit) {}
  /// Takes `n` bytes; false (nothing taken) when that would exceed the limit.
  bool take(std::size_t n);
  /// Gives back `n` bytes taken before.
  void give(std::size_t n) { used_ -= n; }
  /// Bytes taken now.
  std::size_t used() const { return used_; }

 private:
  std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

/// The share of a ByteBudget one exchange holds, given back on destruction; null budget = unbounded.
class BudgetHold {
 public:
  /// Holds nothing yet of `budget` (which must outlive it; may be null).
  explicit BudgetHold(ByteBudget* budget) : budget_(budget) {}
  ~BudgetHold() {
    if (budget_) budget_->give(held_);
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;
  /// Takes `n` more bytes; false when the budget is spent.
  bool grow(std::size_t n);

 private:
  ByteBudget* budget_;
  std::size_t held_ = 0;
};

/// The JSON text of a request frame's payload.
std::string encode_request(const RelayRequest& request);
/// Parses a request frame's payload. Throws cni::CniError(Decoding) naming what is wrong: not JSON,
/// another version, a missing or mistyped field, no requests or more than kMaxRequests, more than
/// kMaxFrameValues values, a request of more than kMaxHeaders headers or kMaxHeaderBytes of them, a
/// target longer than kMaxTargetBytes, a timeout outside 1 ms – 10 min.
RelayRequest decode_request(const std::string& payload);
/// The JSON text of one outcome of an answer frame (a response's body moved out of it).
std::string encode_outcome(http::BatchOutcome&& outcome);
/// The JSON text of an answer frame's payload.
std::string encode_answer(const RelayAnswer& answer);
/// Parses an answer frame's payload for a request of `expected` requests. Throws
/// cni::CniError(Decoding) when it is not a refusal or exactly `expected` well-formed outcomes.
RelayAnswer decode_answer(const std::string& payload, std::size_t expected);

/// Writes one frame (length prefix and payload) to the stream socket `fd` before `deadline`. Throws
/// TransportError: Timeout when the deadline passes, Closed when the peer is gone.
void write_frame(int fd, std::string_view payload, std::chrono::steady_clock::time_point deadline);
/// Reads one frame of at most `max_bytes` from `fd` before `deadline`, in chunks: the buffer grows
/// with the bytes received, each chunk taken from `hold` first when given. Throws TransportError:
/// Timeout when the deadline passes, Closed when the peer closes first (before or within the frame),
/// TooLarge when the announced length exceeds `max_bytes` or `hold`'s budget is spent.
std::string read_frame(int fd, std::size_t max_bytes, std::chrono::steady_clock::time_point deadline,
                       BudgetHold* hold = nullptr);

}  // namespace manifold::relay
