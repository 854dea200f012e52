// Sleeper: pausing the calling thread behind an interface, so retry back-offs and lock waits cost
// no real time in tests (which pass a recording fake).
#pragma once

#include <chrono>

namespace manifold::util {

/// Pauses the calling thread.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  /// Sleeps for `duration`.
  virtual void sleep_for(std::chrono::milliseconds duration) = 0;
};

/// The real Sleeper (std::this_thread::sleep_for).
class RealSleeper final : public Sleeper {
 public:
  /// Sleeps for `duration`.
  void sleep_for(std::chrono::milliseconds duration) override;
};

}  // namespace manifold::util
