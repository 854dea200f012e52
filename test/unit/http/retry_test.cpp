// Tests of the retry policy building blocks: retryable statuses, Retry-After parsing, jittered
// exponential backoff, the attempt/deadline budget, and the fake time sources.
#include <catch2/catch.hpp>

#include "http/retry.h"

using namespace manifold::http;
using manifold::util::FakeClock;
using manifold::util::FakeSleeper;
using std::chrono::milliseconds;

TEST_CASE("retryable statuses are 429, 500, 502, 503 and 504", "[http]") {
  for (int status : {429, 500, 502, 503, 504}) CHECK(is_retryable_status(status));
  for (int status : {200, 201, 400, 401, 403, 404, 409, 410, 422, 501, 505}) CHECK_FALSE(is_retryable_status(status));
}

TEST_CASE("Retry-After is parsed as delta-seconds and capped", "[http]") {
  CHECK(parse_retry_after("3") == milliseconds(3000));
  CHECK(parse_retry_after(" 2\t") == milliseconds(2000));
  CHECK(parse_retry_after("0") == milliseconds(0));
  CHECK(parse_retry_after("7200") == milliseconds(3600 * 1000));
  CHECK(parse_retry_after("99999999999999") == milliseconds(3600 * 1000));
  CHECK_FALSE(parse_retry_after(""));
  CHECK_FALSE(parse_retry_after("-1"));
  CHECK_FALSE(parse_retry_after("1.5"));
  CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
}

TEST_CASE("backoff doubles from the initial value up to the cap, scaled by jitter", "[http]") {
  RetryPolicy p;
  p.initial_backoff = milliseconds(100);
  p.max_backoff = milliseconds(1000);
  CHECK(backoff_delay(p, 1, 0.0) == milliseconds(50));
  CHECK(backoff_delay(p, 1, 1.0) == milliseconds(100));
  CHECK(backoff_delay(p, 2, 0.0) == milliseconds(100));
  CHECK(backoff_delay(p, 3, 0.5) == milliseconds(300));
  CHECK(backoff_delay(p, 4, 1.0) == milliseconds(800));
  CHECK(backoff_delay(p, 5, 1.0) == milliseconds(1000));
  CHECK(backoff_delay(p, 1000, 0.0) == milliseconds(500));  // no overflow for absurd attempt numbers
  CHECK(backoff_delay(p, 2, 7.0) == milliseconds(200));     // jitter clamped
}

TEST_CASE("RetryBudget bounds each attempt by the time left and counts attempts", "[http]") {
  RetryPolicy p;
  p.max_attempts = 3;
  p.request_timeout = milliseconds(800);
  p.total_deadline = milliseconds(1000);
  p.initial_backoff = milliseconds(100);
  FakeClock clock;
  FixedJitter jitter(0.0);
  RetryBudget budget(p, clock, jitter);

  CHECK(budget.begin_attempt() == milliseconds(800));
  clock.advance(milliseconds(700));
  CHECK(budget.wait_before_retry(std::nullopt) == milliseconds(50));
  clock.advance(milliseconds(50));
  CHECK(budget.begin_attempt() == milliseconds(250));  // capped by the 250 ms left
  CHECK(budget.attempts() == 2);
  CHECK(budget.elapsed() == milliseconds(750));
  // A Retry-After that reaches the deadline ends the retries instead of sleeping into it.
  CHECK_FALSE(budget.wait_before_retry(milliseconds(250)));
  CHECK(budget.wait_before_retry(milliseconds(200)) == milliseconds(200));
  CHECK_FALSE(budget.attempts_exhausted());
}

TEST_CASE("RetryBudget stops at the attempt limit and at the deadline", "[http]") {
  RetryPolicy p;
  p.max_attempts = 2;
  p.total_deadline = milliseconds(10000);
  FakeClock clock;
  FixedJitter jitter(0.0);
  RetryBudget budget(p, clock, jitter);
  CHECK(budget.begin_attempt());
  CHECK(budget.wait_before_retry(std::nullopt));
  CHECK(budget.begin_attempt());
  CHECK_FALSE(budget.wait_before_retry(std::nullopt));
  CHECK_FALSE(budget.begin_attempt());
  CHECK(budget.attempts_exhausted());

  RetryBudget late(p, clock, jitter);
  clock.advance(milliseconds(10000));
  CHECK_FALSE(late.begin_attempt());
  CHECK(late.attempts() == 0);
}

TEST_CASE("a zero Retry-After falls back to the backoff", "[http]") {
  RetryPolicy p;
  p.initial_backoff = milliseconds(400);
  FakeClock clock;
  FixedJitter jitter(0.0);
  RetryBudget budget(p, clock, jitter);
  budget.begin_attempt();
  CHECK(budget.wait_before_retry(milliseconds(0)) == milliseconds(200));
}

TEST_CASE("fake time sources record and advance, real jitter stays below 1", "[http]") {
  FakeClock clock;
  auto start = clock.now();
  FakeSleeper sleeper(clock);
  sleeper.sleep_for(milliseconds(1500));
  sleeper.sleep_for(milliseconds(20));
  CHECK(sleeper.waits() == std::vector<milliseconds>{milliseconds(1500), milliseconds(20)});
  CHECK(clock.now() - start == milliseconds(1520));

  RandomJitter jitter;
  double lo = 1, hi = 0;
  for (int i = 0; i < 1000; ++i) {
    double v = jitter.next();
    REQUIRE(v >= 0.0);
    REQUIRE(v < 1.0);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(hi - lo > 0.5);  // not constant
  CHECK(FixedJitter(3.0).next() < 1.0);
  CHECK(FixedJitter(-1.0).next() == 0.0);
}
