// SIGTERM and SIGINT for the long-running commands (`install --watch`, `agent`): a handler that only
// records the signal, the check the loops poll, and a sleep that ends early when it arrives. One
// flag for the whole process, so the agent's threads (installer, watch loop) all see the same stop.
#pragma once

namespace manifold::plugin {

/// Makes SIGTERM and SIGINT request a stop instead of killing the process.
void install_stop_handlers();
/// True once SIGTERM or SIGINT arrived (or request_stop() was called).
bool stop_requested();
/// Requests a stop as the signals do.
void request_stop();
/// Sleeps `ms` milliseconds, waking within 50 ms of a stop request.
void interruptible_sleep(int ms);

}  // namespace manifold::plugin
