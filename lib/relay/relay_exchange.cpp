// Implementation of a bounded relay exchange: waves sent one after another within one deadline, each
// answer vetted, encoded and counted against the frame's limit and the shared budget as it comes.
#include "relay/relay_exchange.h"

#include <algorithm>

namespace manifold::relay {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kNotSent =
    "not sent by the node agent: its answer frame was full, or its requests in flight at their limit";
const char* const kDropped = "sent by the node agent, but its answer did not fit in the relay's answer frame";

http::BatchOutcome failed(const char* why) { return http::TransportError(http::TransportError::Kind::Closed, why); }

constexpr std::size_t kClosing = 2;  // "]}"

/// Slots of an InFlight held for one wave, given back on destruction.
class Slots {
 public:
  Slots(InFlight* in_flight, std::size_t n) : in_flight_(in_flight), n_(n) {}
  ~Slots() {
    if (in_flight_) in_flight_->give(n_);
  }
  Slots(const Slots&) = delete;
  Slots& operator=(const Slots&) = delete;

 private:
  InFlight* in_flight_;
  std::size_t n_;
};

std::string full() {
  return "the answers would exceed the relay's answer frame of " + std::to_string(kMaxAnswerFrame >> 20) +
         " MiB or its memory budget, or its requests in flight upstream are at their limit";
}

}  // namespace

bool InFlight::take(std::size_t n, std::chrono::steady_clock::time_point deadline) {
  n = std::min(n, limit_);
  std::unique_lock lock(mu_);
  if (!freed_.wait_until(lock, deadline, [&] { return used_ + n <= limit_; })) return false;
  used_ += n;
  return true;
}

void InFlight::give(std::size_t n) {
  {
    std::lock_guard lock(mu_);
    used_ -= std::min(n, limit_);
  }
  freed_.notify_all();
}

AnswerWriter::AnswerWriter(std::size_t limit)
    : limit_(limit), text_("{\"v\":" + std::to_string(kVersion) + ",\"outcomes\":[") {}

std::size_t AnswerWriter::failure_bytes() {
  return std::max(encode_outcome(failed(kNotSent)).size(), encode_outcome(failed(kDropped)).size()) + 1;
}

void AnswerWriter::append(const std::string& piece) {
  if (count_++ != 0) text_ += ',';
  text_ += piece;
}

bool AnswerWriter::add(http::BatchOutcome&& outcome, std::size_t reserve, BudgetHold& hold) {
  std::string piece = encode_outcome(std::move(outcome));
  std::size_t needed = text_.size() + 1 + piece.size();
  if (needed + reserve + kClosing > limit_) return false;
  if (needed > text_.capacity()) {  // the buffer's growth is what is counted, not just its content
    std::size_t grown = std::max(needed, std::min(limit_, text_.capacity() * 2));
    if (!hold.grow(grown - text_.capacity())) return false;
    text_.reserve(grown);
  }
  append(piece);
  return true;
}

void AnswerWriter::add_failure(bool sent) { append(encode_outcome(failed(sent ? kDropped : kNotSent))); }

std::string AnswerWriter::finish() && { return std::move(text_) + "]}"; }

ExchangeResult run_exchange(http::HttpTransport& upstream, const std::vector<http::HttpRequest>& requests,
                            std::chrono::milliseconds timeout, std::size_t wave, BudgetHold& hold,
                            const AnswerCheck& check, InFlight* in_flight) {
  const auto deadline = Clock::now() + timeout;
  const auto slot_deadline = Clock::now() + timeout / 2;  // then the client is better off going directly
  const std::size_t failure = AnswerWriter::failure_bytes();
  AnswerWriter answer(kMaxAnswerFrame);
  bool changed_state = false;  // a request other than a GET was sent
  std::size_t largest = 0;     // the largest answer body seen
  std::size_t next = 0;
  // The rest left out: a refusal when only GETs went upstream, else a failure for each.
  auto stop = [&](std::size_t sent_until) -> ExchangeResult {
    if (!changed_state) return {"", full()};
    for (; next < requests.size(); ++next) answer.add_failure(next < sent_until);
    return {std::move(answer).finish(), ""};
  };
  while (next < requests.size()) {
    // Once answers turn out large, no more of them in flight than the frame still has room for.
    std::size_t room = kMaxAnswerFrame - std::min(kMaxAnswerFrame, answer.size());
    std::size_t size = largest == 0 ? wave : std::clamp<std::size_t>(room / largest, 1, wave);
    std::size_t end = next + std::min(size, requests.size() - next);
    if (in_flight && !in_flight->take(end - next, slot_deadline)) return stop(next);
    Slots slots(in_flight, end - next);
    std::vector<http::HttpRequest> batch(requests.begin() + static_cast<std::ptrdiff_t>(next),
                                         requests.begin() + static_cast<std::ptrdiff_t>(end));
    for (const http::HttpRequest& r : batch) changed_state = changed_state || r.method != "GET";
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::vector<http::BatchOutcome> outcomes = upstream.send_batch(batch, std::max(left, std::chrono::milliseconds(1)));
    outcomes.resize(batch.size(), failed(kDropped));
    for (std::size_t k = 0; k < batch.size(); ++k, ++next) {
      if (check)
        if (std::string why = check(batch[k], outcomes[k]); !why.empty()) return {"", why};
      if (const auto* r = std::get_if<http::HttpResponse>(&outcomes[k]))
        largest = std::max(largest, r->body.size() + 1);
      if (!answer.add(std::move(outcomes[k]), failure * (requests.size() - next - 1), hold)) return stop(end);
    }
  }
  return {std::move(answer).finish(), ""};
}

}  // namespace manifold::relay
