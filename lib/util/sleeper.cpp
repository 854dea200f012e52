// Implementation of the real Sleeper.
#include "util/sleeper.h"

#include <thread>

namespace manifold::util {

void RealSleeper::sleep_for(std::chrono::milliseconds duration) { std::this_thread::sleep_for(duration); }

}  // namespace manifold::util
