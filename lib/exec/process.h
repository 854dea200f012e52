// Running a child process and capturing what it prints. Every delegate plugin (and any other helper
// binary) is started through the ProcessRunner interface so that command logic can be tested with
// FakeProcessRunner. RealProcessRunner runs the program with util::run_child: in its own process
// group with fresh pipes (nothing else inherited), stdin fed while stdout/stderr drain in one poll
// loop, the captured output capped, the whole group killed on timeout, "text file busy" retried,
// always reaped.
#pragma once

#include "util/clock.h"

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace manifold::exec {

/// What to run and how.
struct ProcessRequest {
  /// Absolute (or cwd-relative) path of the program; no PATH search is done.
  std::string path;
  /// argv including argv[0]; when empty, argv is {path}.
  std::vector<std::string> argv;
  /// The complete environment of the child, as "KEY=VALUE" entries.
  std::vector<std::string> env;
  /// Bytes written to the child's stdin, which is then closed.
  std::string stdin_data;
  /// Wall-clock limit for the whole run; the process group is SIGKILLed when it expires.
  std::chrono::milliseconds timeout{60000};
  /// How long stdout/stderr may stay open after the child itself exited (a background grandchild
  /// still holding a pipe); when it expires the process group is SIGKILLed and the run ends
  /// normally with the child's own exit status.
  std::chrono::milliseconds exit_grace{500};
  /// Maximum bytes kept of stdout and (separately) of stderr; the rest is read and dropped.
  size_t max_output = 16u << 20;
};

/// What happened. Exec failures are reported shell-style: exit_code 127 (ENOENT) or 126 (any other
/// errno, e.g. EACCES or ETXTBSY after the retries), the errno text in stderr_data, and the errno
/// in exec_errno, which is non-zero only when the program could not be started at all.
struct ProcessResult {
  /// Exit status when the child exited normally, -1 when it was killed by a signal.
  int exit_code = -1;
  /// The terminating signal when the child was killed by one, else 0.
  int term_signal = 0;
  /// True when the run hit ProcessRequest::timeout and the process group was killed.
  bool timed_out = false;
  /// True when stdout or stderr exceeded ProcessRequest::max_output.
  bool output_truncated = false;
  /// errno of the failed spawn/exec, 0 when the program was started.
  int exec_errno = 0;
  /// Captured output (at most max_output bytes each).
  std::string stdout_data, stderr_data;
};

/// Runs a child process. Abstract so commands can be tested with a fake.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  /// Runs the request to completion (or timeout) and reports the outcome. Throws only for failures
  /// of manifold itself (pipes, poll), never for anything the child does.
  virtual ProcessResult run(const ProcessRequest& request) = 0;
};

/// Runs real processes (util::run_child).
class RealProcessRunner final : public ProcessRunner {
 public:
  /// How many times a spawn failing with ETXTBSY is retried (an installer may be replacing the
  /// file).
  static constexpr int kTextBusyRetries = 5;
  /// The first ETXTBSY back-off; it doubles on every further retry.
  static constexpr std::chrono::milliseconds kTextBusyBackoff{100};

  /// Uses a real sleeper for the ETXTBSY back-off.
  RealProcessRunner();
  /// Uses `sleeper` (which must outlive the runner) for the ETXTBSY back-off. With `use_pidfd`
  /// false, child exit is noticed by the short poll tick used on kernels without pidfd_open
  /// (before 5.3) even where pidfds exist, so tests can exercise that path.
  explicit RealProcessRunner(util::Sleeper& sleeper, bool use_pidfd = true);
  RealProcessRunner(const RealProcessRunner&) = delete;
  RealProcessRunner& operator=(const RealProcessRunner&) = delete;

  /// Runs the request; see ProcessResult for how failures are reported.
  ProcessResult run(const ProcessRequest& request) override;

 private:
  util::RealSleeper own_sleeper_;
  util::Sleeper& sleeper_;
  bool use_pidfd_ = true;
};

/// A scripted ProcessRunner for tests: records every request and answers from a queue of results,
/// then from a handler. Running with neither left throws CniError(Internal). Thread-safe.
class FakeProcessRunner final : public ProcessRunner {
 public:
  /// Computes a result for a request.
  using Handler = std::function<ProcessResult(const ProcessRequest&)>;

  /// Queues a result for the next run() (queued results are used before the handler).
  void push_result(ProcessResult result);
  /// Answers every run() that finds the queue empty.
  void set_handler(Handler handler);
  /// Every request seen so far, oldest first.
  std::vector<ProcessRequest> requests() const;

  /// Records the request and answers it.
  ProcessResult run(const ProcessRequest& request) override;

 private:
  mutable std::mutex mu_;
  std::vector<ProcessRequest> requests_;
  std::deque<ProcessResult> queue_;
  Handler handler_;
};

}  // namespace manifold::exec
