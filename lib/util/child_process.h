// The one child launcher of manifold. run_child starts a program — a delegate plugin, iptables-save
// or -restore inside a pod's network namespace, gzip — and collects it. The child gets every signal
// at its default and unblocked, a process group of its own, the optional network namespace
// (setns), the stdio ends on 0–2 and no other descriptor, and execve with an explicit environment
// and no PATH search (posix_spawn, or fork when a namespace must be entered); when it cannot be
// started, the result names the step that failed and the errno. The parent feeds stdin while draining
// stdout and stderr in one poll loop (so neither side can deadlock), keeps at most a cap of each,
// kills the whole process group on timeout, and always reaps. run_detached runs work in a detached
// grandchild that the caller never waits for (background log compression). The interfaces callers
// are tested through (exec::ProcessRunner, firewall::IptablesRunner, util::Compressor and
// util::BackgroundRunner) have fakes; this is the real thing under them.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/clock.h"

namespace manifold::util {

/// manifold itself could not run a child (pipe, fcntl or poll failed); never raised for anything
/// the child does. The message is "<call>: <errno text>".
class ChildError : public std::runtime_error {
 public:
  /// `message` names the failed call and the cause.
  explicit ChildError(const std::string& message) : std::runtime_error(message) {}
};

/// What to run and how.
struct ChildSpec {
  /// The program (absolute or cwd-relative); no PATH search is done.
  std::string path;
  /// argv including argv[0]; when empty, argv is {path}.
  std::vector<std::string> argv;
  /// The complete environment of the child, as "KEY=VALUE" entries.
  std::vector<std::string> env;
  /// Bytes written to the child's stdin, which is then closed (ignored when stdin_fd is set).
  std::string stdin_data;
  /// When >= 0, the child's stdin is this descriptor (borrowed) instead of a pipe.
  int stdin_fd = -1;
  /// When >= 0, the child's stdout is this descriptor (borrowed) instead of a captured pipe.
  int stdout_fd = -1;
  /// When >= 0, an open network namespace file (borrowed) the child enters before exec.
  int netns_fd = -1;
  /// Limit for the whole run; the process group is SIGKILLed when it expires.
  std::chrono::milliseconds timeout{60000};
  /// How long stdout/stderr may stay open after the child itself exited (a background grandchild
  /// still holding a pipe); then the process group is SIGKILLed and the run ends normally.
  std::chrono::milliseconds exit_grace{500};
  /// Maximum bytes kept of stdout; the rest is read and dropped (or see kill_on_stdout_overflow).
  std::size_t max_stdout = 16u << 20;
  /// Maximum bytes kept of stderr; the rest is read and dropped.
  std::size_t max_stderr = 16u << 20;
  /// When true, stdout exceeding max_stdout kills the process group and ends the run at once.
  bool kill_on_stdout_overflow = false;
  /// How many times an exec failing with ETXTBSY is retried (an installer may still be writing
  /// the file), after text_busy_backoff, doubled on every further retry.
  int text_busy_retries = 0;
  /// The first ETXTBSY back-off.
  std::chrono::milliseconds text_busy_backoff{100};
  /// With false, child exit is noticed by a short poll tick (the path of kernels before 5.3, which
  /// have no pidfd_open) even where pidfds exist, so tests can exercise it.
  bool use_pidfd = true;
};

/// The step of starting the child that failed.
enum class ChildStep {
  None,   ///< the program was started
  Fork,   ///< fork() failed
  Netns,  ///< entering the network namespace failed
  Stdio,  ///< connecting stdin/stdout/stderr failed
  Exec,   ///< execve() failed (or the path or an argument holds a NUL byte: EINVAL)
};

/// What happened.
struct ChildResult {
  /// The step that failed, None when the program was started.
  ChildStep failed_step = ChildStep::None;
  /// errno of the failed step, 0 when the program was started.
  int start_errno = 0;
  /// Exit status when the child exited normally, -1 otherwise.
  int exit_code = -1;
  /// The terminating signal when the child was killed by one, else 0.
  int term_signal = 0;
  /// True when the run hit ChildSpec::timeout and the process group was killed.
  bool timed_out = false;
  /// True when stdout or stderr exceeded its cap.
  bool output_truncated = false;
  /// True when kill_on_stdout_overflow ended the run.
  bool killed_for_output = false;
  /// Captured output (at most the caps).
  std::string stdout_data, stderr_data;
};

/// Runs `spec` to completion (or timeout) and reports the outcome; `sleeper` paces the ETXTBSY
/// retries. Throws ChildError only for failures of manifold itself.
ChildResult run_child(const ChildSpec& spec, Sleeper& sleeper);

/// run_child with a real sleeper.
ChildResult run_child(const ChildSpec& spec);

/// Runs `work` (which must not throw) in a detached grandchild: fork, setsid, fork again; the
/// grandchild gets /dev/null as stdin, stdout and stderr, closes every other descriptor, runs the
/// work and exits; the intermediate child exits at once and is reaped, so the caller never waits
/// for the work and leaves no zombie. Returns false, having done nothing, when the first fork fails.
bool run_detached(const std::function<void()>& work);

}  // namespace manifold::util
