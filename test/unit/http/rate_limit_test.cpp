// Tests for http/rate_limit: the token bucket's burst, refill and queueing, and the transport that
// takes one token per request (each of a batch, each stream).
#include "http/rate_limit.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "util/clock.h"

using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::RateLimitedTransport;
using manifold::http::RequestRateLimit;
using std::chrono::milliseconds;

namespace {

struct Bucket {
  std::shared_ptr<manifold::util::FakeClock> clock = std::make_shared<manifold::util::FakeClock>();
  std::shared_ptr<manifold::util::FakeSleeper> sleeper = std::make_shared<manifold::util::FakeSleeper>(*clock);
  std::shared_ptr<RequestRateLimit> limit;
  Bucket(double per_second, double burst)
      : limit(std::make_shared<RequestRateLimit>(per_second, burst, clock, sleeper)) {}
};

}  // namespace

TEST_CASE("rate limit: a full bucket's burst goes at once, then one request per 1/rate", "[http]") {
  Bucket b(10, 3);
  for (int i = 0; i < 3; ++i) CHECK(b.limit->acquire() == milliseconds(0));
  CHECK(b.limit->acquire() == milliseconds(100));
  CHECK(b.limit->acquire() == milliseconds(100));
  CHECK(b.limit->throttled() == 2);
  CHECK(b.sleeper->waits() == std::vector<milliseconds>{milliseconds(100), milliseconds(100)});
}

TEST_CASE("rate limit: the bucket refills with time, never above its burst", "[http]") {
  Bucket b(2, 2);
  b.limit->acquire();
  b.limit->acquire();
  b.clock->advance(std::chrono::hours(1));  // a long quiet spell refills 2 tokens, not 7200
  CHECK(b.limit->acquire() == milliseconds(0));
  CHECK(b.limit->acquire() == milliseconds(0));
  CHECK(b.limit->acquire() == milliseconds(500));
}

TEST_CASE("rate limit: callers arriving together queue up behind the tokens already promised", "[http]") {
  // Without a sleeper that moves the clock, each caller sees the deficit of those before it.
  auto clock = std::make_shared<manifold::util::FakeClock>();
  auto sleeper = std::make_shared<manifold::util::FakeSleeper>();
  RequestRateLimit limit(4, 1, clock, sleeper);
  CHECK(limit.acquire() == milliseconds(0));
  CHECK(limit.acquire() == milliseconds(250));
  CHECK(limit.acquire() == milliseconds(500));
  CHECK(limit.acquire() == milliseconds(750));
}

TEST_CASE("rate limit: nonsense settings are refused", "[http]") {
  auto clock = std::make_shared<manifold::util::FakeClock>();
  auto sleeper = std::make_shared<manifold::util::FakeSleeper>();
  CHECK_THROWS_AS(RequestRateLimit(0, 1, clock, sleeper), std::invalid_argument);
  CHECK_THROWS_AS(RequestRateLimit(1, 0.5, clock, sleeper), std::invalid_argument);
  CHECK_THROWS_AS(RequestRateLimit(std::nan(""), 1, clock, sleeper), std::invalid_argument);
}

TEST_CASE("rate limited transport: one token per request, per batch element and per stream", "[http]") {
  Bucket b(1, 1);
  auto fake = std::make_unique<FakeHttpTransport>();
  FakeHttpTransport& inner = *fake;
  for (int i = 0; i < 3; ++i) inner.push_response(200, "{}");
  inner.push_stream(200, {"x"});
  RateLimitedTransport t(std::move(fake), b.limit);
  HttpRequest get{"GET", "/api/v1/namespaces/a/pods/p", {}, {}};
  CHECK(t.send(get, milliseconds(1000)).status == 200);
  auto outcomes = t.send_batch({get, get}, milliseconds(1000));
  CHECK(outcomes.size() == 2);
  t.stream(get, {}, [](std::string_view) { return true; });
  CHECK(inner.requests().size() == 4);
  CHECK(b.limit->throttled() == 3);
  CHECK(b.sleeper->waits() == std::vector<milliseconds>{milliseconds(1000), milliseconds(1000), milliseconds(1000)});
}
