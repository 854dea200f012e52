// Retry policy for Kubernetes API requests: which answers are retried, how long to wait between
// attempts (exponential backoff with jitter, or the server's Retry-After), and the per-request and
// total time bounds. Time comes through util::Clock and util::Sleeper and jitter through
// JitterSource, all interfaces with real and fake implementations, so the retry logic is
// unit-tested without sleeping.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "util/clock.h"

namespace manifold::http {

using std::chrono::milliseconds;

/// Bounds of one logical API call (all its attempts).
struct RetryPolicy {
  int max_attempts = 5;                ///< attempts in total, including the first (≥ 1)
  milliseconds initial_backoff{100};   ///< wait before the second attempt (before jitter)
  milliseconds max_backoff{2000};      ///< the exponential backoff never waits longer
  milliseconds request_timeout{5000};  ///< bound of each attempt (connect + TLS + write + read)
  milliseconds total_deadline{15000};  ///< bound of all attempts and waits together
};

/// Source of jitter fractions.
class JitterSource {
 public:
  virtual ~JitterSource() = default;
  /// A value in [0, 1).
  virtual double next() = 0;
};

/// A uniform pseudo-random jitter source seeded from std::random_device.
class RandomJitter final : public JitterSource {
 public:
  /// Seeds from std::random_device.
  RandomJitter();
  /// The next pseudo-random value in [0, 1).
  double next() override;

 private:
  unsigned long long state_;
};

/// Always returns the same fraction.
class FixedJitter final : public JitterSource {
 public:
  /// `value` is clamped into [0, 1).
  explicit FixedJitter(double value);
  /// The fixed value.
  double next() override { return value_; }

 private:
  double value_;
};

/// True for HTTP statuses worth retrying: 429, 500, 502, 503, 504.
bool is_retryable_status(int status);

/// Parses a Retry-After header given in delta-seconds ("3"); HTTP dates and garbage yield nullopt.
/// Values are capped at one hour.
std::optional<milliseconds> parse_retry_after(std::string_view value);

/// Backoff before attempt `attempt + 1` after `attempt` failed (attempt ≥ 1):
/// base = min(max_backoff, initial_backoff · 2^(attempt−1)), result = base · (0.5 + jitter/2).
milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double jitter);

/// Tracks the attempts and the deadline of one logical API call.
class RetryBudget {
 public:
  /// Starts the budget now (reads `clock`).
  RetryBudget(const RetryPolicy& policy, util::Clock& clock, JitterSource& jitter);
  /// Counts a new attempt and returns its timeout: min(request_timeout, time left), or nullopt when
  /// the attempt limit or the deadline leaves no room for it.
  std::optional<milliseconds> begin_attempt();
  /// After a retryable failure: the wait before the next attempt (the server's Retry-After when
  /// given, else the jittered backoff), or nullopt when another attempt is not allowed because the
  /// attempt limit is reached or the wait would reach the deadline.
  std::optional<milliseconds> wait_before_retry(std::optional<milliseconds> retry_after);
  /// Attempts begun so far.
  int attempts() const { return attempts_; }
  /// Time since the budget started.
  milliseconds elapsed() const;
  /// True when the attempt limit (rather than the deadline) ended the retries.
  bool attempts_exhausted() const { return attempts_ >= policy_.max_attempts; }

 private:
  milliseconds remaining() const;
  RetryPolicy policy_;
  util::Clock& clock_;
  JitterSource& jitter_;
  std::chrono::steady_clock::time_point start_;
  int attempts_ = 0;
};

}  // namespace manifold::http
