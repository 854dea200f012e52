// Time behind interfaces: the monotonic Clock and the Sleeper every retry back-off, lock wait,
// readiness poll and API deadline goes through, with their real implementations and the one fake
// pair the tests share (FakeSleeper records the waits and moves a FakeClock, so nothing really
// sleeps). The wall clock is a separate interface because it answers a different question: log
// backups are named by UTC time and pruned by age across processes, which a monotonic clock (whose
// epoch is the boot) cannot express, while deadlines must not jump when the wall clock is set.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

namespace manifold::util {

/// A monotonic clock (measures deadlines and elapsed time).
class Clock {
 public:
  virtual ~Clock() = default;
  /// The current monotonic time.
  virtual std::chrono::steady_clock::time_point now() const = 0;
};

/// Pauses the calling thread.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  /// Blocks for `duration` (returns at once when it is not positive).
  virtual void sleep_for(std::chrono::milliseconds duration) = 0;
};

/// std::chrono::steady_clock.
class SteadyClock final : public Clock {
 public:
  /// steady_clock::now().
  std::chrono::steady_clock::time_point now() const override { return std::chrono::steady_clock::now(); }
};

/// The real Sleeper (std::this_thread::sleep_for).
class RealSleeper final : public Sleeper {
 public:
  /// Sleeps the calling thread.
  void sleep_for(std::chrono::milliseconds duration) override;
};

/// A monotonic clock that only moves when told to (tests).
class FakeClock final : public Clock {
 public:
  /// The current fake time (starts one hour after the clock's epoch).
  std::chrono::steady_clock::time_point now() const override { return now_; }
  /// Moves the clock forward.
  void advance(std::chrono::milliseconds by) { now_ += by; }

 private:
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
};

/// The shared test sleeper: records every requested wait instead of sleeping, advances an optional
/// FakeClock by it, then calls an optional hook (so a test can change the world during a wait).
/// Not thread-safe.
class FakeSleeper final : public Sleeper {
 public:
  /// Called after each wait is recorded, with the number of waits recorded so far.
  using Hook = std::function<void(std::size_t waits_so_far)>;

  /// A sleeper that only records.
  FakeSleeper() = default;
  /// A sleeper that records and advances `clock` (which must outlive it).
  explicit FakeSleeper(FakeClock& clock) : clock_(&clock) {}
  /// Records `duration`, advances the clock and runs the hook, without sleeping.
  void sleep_for(std::chrono::milliseconds duration) override;
  /// Every wait requested, in order.
  const std::vector<std::chrono::milliseconds>& waits() const { return waits_; }
  /// Forgets the waits recorded so far.
  void clear() { waits_.clear(); }
  /// Sets the hook run after every wait (empty: none).
  void on_sleep(Hook hook) { hook_ = std::move(hook); }

 private:
  FakeClock* clock_ = nullptr;
  std::vector<std::chrono::milliseconds> waits_;
  Hook hook_;
};

/// Wall-clock time (names log backups and decides their age).
class WallClock {
 public:
  virtual ~WallClock() = default;
  /// The current time.
  virtual std::chrono::system_clock::time_point now() const = 0;
};

/// std::chrono::system_clock.
class SystemWallClock final : public WallClock {
 public:
  /// system_clock::now().
  std::chrono::system_clock::time_point now() const override { return std::chrono::system_clock::now(); }
};

/// A wall clock that only moves when told to (tests).
class FakeWallClock final : public WallClock {
 public:
  /// Starts at `start`.
  explicit FakeWallClock(std::chrono::system_clock::time_point start) : now_(start) {}
  /// The current fake time.
  std::chrono::system_clock::time_point now() const override { return now_; }
  /// Moves the clock forward.
  void advance(std::chrono::system_clock::duration by) { now_ += by; }

 private:
  std::chrono::system_clock::time_point now_;
};

}  // namespace manifold::util
