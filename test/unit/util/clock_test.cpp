// Tests for lib/util/clock: the fake sleeper records, advances its fake clock and runs its hook;
// the real sleeper and clock really move; the fake wall clock only moves when told to.
#include "util/clock.h"

#include <catch2/catch.hpp>

using manifold::util::FakeClock;
using manifold::util::FakeSleeper;
using manifold::util::FakeWallClock;
using manifold::util::RealSleeper;
using manifold::util::SteadyClock;
using namespace std::chrono_literals;

TEST_CASE("util clock: the fake sleeper records, advances the clock and runs its hook", "[util]") {
  FakeClock clock;
  const auto start = clock.now();
  FakeSleeper sleeper(clock);
  std::vector<std::size_t> seen;
  sleeper.on_sleep([&](std::size_t n) {
    seen.push_back(n);
    CHECK(clock.now() - start == (n == 1 ? 5ms : 12ms));  // the clock moved before the hook
  });
  sleeper.sleep_for(5ms);
  sleeper.sleep_for(7ms);
  CHECK(sleeper.waits() == std::vector<std::chrono::milliseconds>{5ms, 7ms});
  CHECK(seen == std::vector<std::size_t>{1, 2});
  sleeper.clear();
  CHECK(sleeper.waits().empty());

  FakeSleeper unclocked;  // records only
  unclocked.sleep_for(3ms);
  CHECK(unclocked.waits().size() == 1);
  CHECK(clock.now() - start == 12ms);
}

TEST_CASE("util clock: the real sleeper waits on the real clock; non-positive waits return", "[util]") {
  SteadyClock clock;
  RealSleeper sleeper;
  auto start = clock.now();
  sleeper.sleep_for(20ms);
  CHECK(clock.now() - start >= 20ms);
  sleeper.sleep_for(-5ms);
  sleeper.sleep_for(0ms);
}

TEST_CASE("util clock: the fake wall clock moves only when advanced", "[util]") {
  const auto t0 = std::chrono::system_clock::from_time_t(1767323045);
  FakeWallClock wall(t0);
  CHECK(wall.now() == t0);
  wall.advance(std::chrono::hours(25));
  CHECK(wall.now() - t0 == std::chrono::hours(25));
}
