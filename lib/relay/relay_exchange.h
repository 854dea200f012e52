// The upstream half of one relay exchange, bounded in memory: the requests go to the API server in
// small pipelined waves, and each answer is encoded into the answer frame as it arrives (its body
// moved, not copied), so the agent holds at most one wave of raw answers and the frame being built;
// the requests in flight of all exchanges together are capped too (InFlight), so concurrent
// exchanges cannot multiply the raw answers held. The frame stops at the client's limit
// (kMaxAnswerFrame) and at the relay's shared byte budget: no further request is sent once the
// answer is full. Then, if nothing that changes state was sent
// (GETs only, which the client may repeat), the whole exchange is refused and the client goes
// directly; otherwise each request left out fails as a closed connection would (retryable: the
// client's own retry policy decides, nothing is sent again behind its back).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "http/http.h"
#include "relay/relay_protocol.h"

namespace manifold::relay {

/// How many requests all exchanges together may have in flight upstream. Thread-safe.
class InFlight {
 public:
  /// At most `limit` requests at once.
  explicit InFlight(std::size_t limit) : limit_(limit) {}
  /// Takes `n` slots (at most the limit), waiting for them until `deadline`; false when they did not
  /// free up in time.
  bool take(std::size_t n, std::chrono::steady_clock::time_point deadline);
  /// Gives back `n` slots taken before.
  void give(std::size_t n);

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
  std::mutex mu_;
  std::condition_variable freed_;
};

/// Builds an answer frame's payload one outcome at a time, within a byte limit.
class AnswerWriter {
 public:
  /// An empty answer whose payload may take `limit` bytes.
  explicit AnswerWriter(std::size_t limit);
  /// Appends `outcome` (its body moved out) when the payload then still leaves room for `reserve`
  /// more bytes and `hold` grants the bytes; false (nothing appended) otherwise.
  bool add(http::BatchOutcome&& outcome, std::size_t reserve, BudgetHold& hold);
  /// Appends the failure of a request left out of the answer: sent (its answer dropped) or not;
  /// always fits (see failure_bytes()).
  void add_failure(bool sent);
  /// The most bytes add_failure() appends.
  static std::size_t failure_bytes();
  /// The payload's size so far.
  std::size_t size() const { return text_.size(); }
  /// The payload (decode_answer() reads it).
  std::string finish() &&;

 private:
  void append(const std::string& piece);
  std::size_t limit_;
  std::string text_;
  std::size_t count_ = 0;
};

/// The result of an exchange: the answer frame's payload, or a refusal.
struct ExchangeResult {
  std::string payload;  ///< the answer's payload when not refused
  std::string refused;  ///< why the whole exchange is refused (only when no state-changing request was sent)
};

/// Checks one answer before it is handed out: why it may not be ("" when it may).
using AnswerCheck = std::function<std::string(const http::HttpRequest&, const http::BatchOutcome&)>;

/// Sends `requests` through `upstream` in waves of at most `wave` requests (fewer once answers turn
/// out large), each wave's slots taken from `in_flight` first (when given), all within `timeout`,
/// encoding the answers within kMaxAnswerFrame and `hold`'s budget. `check` (may be empty) sees and
/// vets each answer: a reason it returns refuses the exchange, which only an exchange of GETs may be.
ExchangeResult run_exchange(http::HttpTransport& upstream, const std::vector<http::HttpRequest>& requests,
                            std::chrono::milliseconds timeout, std::size_t wave, BudgetHold& hold,
                            const AnswerCheck& check, InFlight* in_flight = nullptr);

}  // namespace manifold::relay
