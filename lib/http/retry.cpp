// Retry policy implementation: retryable statuses, Retry-After parsing, jittered exponential
// backoff, the per-call attempt/deadline budget and the jitter sources.
#include "http/retry.h"

#include <algorithm>
#include <random>

namespace manifold::http {

RandomJitter::RandomJitter() {
  std::random_device rd;
  state_ = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
}

double RandomJitter::next() {
  // splitmix64: tiny, fast, good enough to decorrelate retries of concurrent CNI invocations.
  unsigned long long z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

FixedJitter::FixedJitter(double value) : value_(std::clamp(value, 0.0, 0.999999)) {}

bool is_retryable_status(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

std::optional<milliseconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty() || value.size() > 9) {
    // More than 9 digits is certainly beyond the cap; an HTTP date is not supported.
    if (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos)
      return milliseconds(std::chrono::hours(1));
    return std::nullopt;
  }
  long long seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = seconds * 10 + (c - '0');
  }
  return milliseconds(std::min<long long>(seconds, 3600) * 1000);
}

milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double jitter) {
  long long base = std::max<long long>(policy.initial_backoff.count(), 0);
  const long long cap = std::max<long long>(policy.max_backoff.count(), 0);
  for (int i = 1; i < attempt && base < cap; ++i) base *= 2;
  base = std::min(base, cap);
  jitter = std::clamp(jitter, 0.0, 1.0);
  return milliseconds(static_cast<long long>(static_cast<double>(base) * (0.5 + jitter / 2.0)));
}

RetryBudget::RetryBudget(const RetryPolicy& policy, util::Clock& clock, JitterSource& jitter)
    : policy_(policy), clock_(clock), jitter_(jitter), start_(clock.now()) {}

milliseconds RetryBudget::elapsed() const { return std::chrono::duration_cast<milliseconds>(clock_.now() - start_); }

milliseconds RetryBudget::remaining() const { return policy_.total_deadline - elapsed(); }

std::optional<milliseconds> RetryBudget::begin_attempt() {
  if (attempts_ >= std::max(policy_.max_attempts, 1)) return std::nullopt;
  milliseconds left = remaining();
  if (left.count() <= 0) return std::nullopt;
  ++attempts_;
  return std::min(policy_.request_timeout, left);
}

std::optional<milliseconds> RetryBudget::wait_before_retry(std::optional<milliseconds> retry_after) {
  if (attempts_ >= policy_.max_attempts) return std::nullopt;
  milliseconds wait =
      (retry_after && retry_after->count() > 0) ? *retry_after : backoff_delay(policy_, attempts_, jitter_.next());
  // Never sleep into the deadline: an attempt after it could not run anyway.
  if (wait >= remaining()) return std::nullopt;
  return wait;
}

}  // namespace manifold::http
