// Implementation of the real and fake sleepers.
#include "util/clock.h"

#include <thread>

namespace manifold::util {

void RealSleeper::sleep_for(std::chrono::milliseconds duration) {
  if (duration.count() > 0) std::this_thread::sleep_for(duration);
}

void FakeSleeper::sleep_for(std::chrono::milliseconds duration) {
  waits_.push_back(duration);
  if (clock_ != nullptr) clock_->advance(duration);
  if (hook_) hook_(waits_.size());
}

}  // namespace manifold::util
