// The parent side of run_child (util/child_process.h), internal to lib/util: pipes kept above the
// stdio numbers, the SIGPIPE block, the handle of a started child (exit noticed without reaping,
// group kill, reap) and the poll loop that feeds its stdin and drains its outputs.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "util/child_process.h"
#include "util/unique_fd.h"

namespace manifold::util::detail {

/// Throws ChildError("<what>: <strerror(err)>").
[[noreturn]] void throw_child_error(const std::string& what, int err);

/// `fd` renumbered to >= 3 (close-on-exec), so that the child's dup2 onto 0/1/2 can never overwrite
/// another descriptor it still needs, even when manifold was started with 0–2 closed.
UniqueFd above_stdio(UniqueFd fd);

/// A close-on-exec pipe, both ends above the stdio numbers.
struct Pipe {
  UniqueFd read_end;   ///< the end read from
  UniqueFd write_end;  ///< the end written to
};

/// Creates a Pipe.
Pipe make_pipe();

/// Blocks SIGPIPE on this thread for its lifetime and discards a SIGPIPE raised meanwhile, so a
/// child closing its stdin early shows up as EPIPE instead of killing manifold. Thread-local: the
/// process-wide disposition is left alone.
class SigpipeBlock {
 public:
  /// Blocks SIGPIPE.
  SigpipeBlock();
  /// Discards a SIGPIPE raised in the scope and restores the mask.
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_set_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

/// A started child. Until reaped it is a process (or zombie) that pins its pid and process group
/// id, so killing the group can never hit an unrelated process; the destructor kills the group
/// and reaps, so no exit path leaves a zombie or a runaway.
class RunningChild {
 public:
  /// Owns `pid`; with `use_pidfd` also opens a pidfd for it when the kernel supports that.
  RunningChild(pid_t pid, bool use_pidfd);
  /// Kills the group and reaps unless reap() was called.
  ~RunningChild();
  RunningChild(const RunningChild&) = delete;
  RunningChild& operator=(const RunningChild&) = delete;

  /// The pidfd, or -1 when there is none.
  int pidfd() const { return pidfd_.get(); }
  /// True once the child has exited (checked without reaping it).
  bool exited();
  /// SIGKILLs the child's process group, and the child itself in case it left the group.
  void kill_group();
  /// Waits for the child and returns its wait status (nullopt if it was reaped elsewhere).
  std::optional<int> reap();

 private:
  pid_t pid_;
  UniqueFd pidfd_;
  bool exited_ = false;
  bool reaped_ = false;
};

/// One captured output stream.
struct Capture {
  UniqueFd fd;              ///< the parent's read end (invalid once closed)
  std::string* data;        ///< where the bytes go
  std::size_t cap;          ///< bytes kept at most
  bool overflowed = false;  ///< more than `cap` bytes arrived
};

/// The parent's ends of a running child's stdio and the loop that services them.
class ChildIo {
 public:
  /// Takes the parent's ends: `stdin_end` (may be invalid), and the read ends of stdout and stderr
  /// (stdout may be invalid when it is redirected), capturing into `result`.
  ChildIo(UniqueFd stdin_end, UniqueFd stdout_end, UniqueFd stderr_end, const ChildSpec& spec, ChildResult& result);

  /// Feeds stdin and drains the outputs until the child exited and both outputs closed, the
  /// timeout expired, stdout overflowed with kill_on_stdout_overflow, or outputs stayed open for
  /// exit_grace after the child exited. In all but the first case the process group is killed.
  void pump(RunningChild& child);
  /// Keeps what is still buffered in the pipes (bounded: a process that escaped the group could
  /// refill them forever) and closes everything.
  void finish();

 private:
  bool outputs_open() const { return captures_[0].fd.valid() || captures_[1].fd.valid(); }
  bool stdout_overflowed() const;
  void wait_and_service(int pidfd, int timeout_ms);

  const ChildSpec& spec_;
  ChildResult& result_;
  UniqueFd stdin_;
  std::size_t stdin_offset_ = 0;
  Capture captures_[2];
};

/// Fills exit_code/term_signal from a wait status.
void record_status(std::optional<int> status, ChildResult& result);

}  // namespace manifold::util::detail
