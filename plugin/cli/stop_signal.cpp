// Implementation of the stop flag: an async-signal-safe atomic set by the handler.
#include "plugin/cli/stop_signal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace manifold::plugin {

namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void on_stop_signal(int) { g_stop.store(true); }

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }

void request_stop() { g_stop.store(true); }

void interruptible_sleep(int ms) {
  using namespace std::chrono;
  auto end = steady_clock::now() + milliseconds(ms);
  while (!stop_requested()) {
    auto left = duration_cast<milliseconds>(end - steady_clock::now());
    if (left <= milliseconds(0)) return;
    std::this_thread::sleep_for(std::min(left, milliseconds(50)));
  }
}

}  // namespace manifold::plugin
