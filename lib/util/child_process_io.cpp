// The parent side of run_child: pipes, the SIGPIPE block, the child handle and the stdio loop.
// Child exit is observed without reaping (a pidfd when the kernel has them, otherwise
// waitid(WNOWAIT) on a short poll tick), so the process group id stays reserved until the final
// waitpid.
#include "util/child_process_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

namespace manifold::util::detail {

namespace {

using Steady = std::chrono::steady_clock;

/// Largest chunk moved per read()/write() call.
constexpr std::size_t kChunk = 64 * 1024;
/// Reads per stream per loop iteration, so a flooding child cannot starve the timeout check.
constexpr int kReadsPerWakeup = 16;
/// Poll tick used to notice child exit when the kernel has no pidfd_open (Linux < 5.3).
constexpr std::chrono::milliseconds kExitPollTick{20};
/// Read rounds spent on what is still buffered in a pipe after the loop ended (at least one full
/// pipe buffer, which Linux caps at 1 MiB for unprivileged resizes).
constexpr int kFinalDrainRounds = 4;

void set_nonblocking(const UniqueFd& fd) {
  if (!fd.valid()) return;
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) < 0) throw_child_error("fcntl(O_NONBLOCK)", errno);
}

/// A pidfd for `pid` (always close-on-exec), or -1 on kernels before 5.3. Called through syscall()
/// because glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

/// Reads what is available on `c` (at most kReadsPerWakeup reads), keeping at most its cap and
/// noting `truncated` when more came. Returns true when the pipe is empty for now or closed, false
/// when it may hold more.
bool read_available(Capture& c, bool& truncated) {
  char buf[kChunk];
  for (int i = 0; i < kReadsPerWakeup; ++i) {
    if (!c.fd.valid()) return true;
    ssize_t n = ::read(c.fd.get(), buf, sizeof buf);
    if (n > 0) {
      std::size_t got = static_cast<std::size_t>(n);
      std::size_t room = c.cap > c.data->size() ? c.cap - c.data->size() : 0;
      std::size_t keep = std::min(room, got);
      c.data->append(buf, keep);
      if (keep < got) truncated = c.overflowed = true;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    } else {
      c.fd.reset();  // EOF, or an error that ends the stream
    }
  }
  return !c.fd.valid();
}

/// Writes as much of the remaining stdin as the pipe takes; closes it when done or refused.
void write_available(UniqueFd& fd, const std::string& data, std::size_t& offset) {
  while (fd.valid() && offset < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + offset, std::min(kChunk, data.size() - offset));
    if (n > 0) {
      offset += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    } else {
      fd.reset();  // EPIPE: the child does not want the rest
    }
  }
  fd.reset();
}

int poll_timeout_ms(Steady::duration d) {
  if (d <= Steady::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

/// `now + d`, saturating instead of overflowing for absurdly long durations.
Steady::time_point after(Steady::time_point now, std::chrono::milliseconds d) {
  constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365);
  return now + std::clamp(d, std::chrono::milliseconds::zero(), kForever);
}

}  // namespace

void throw_child_error(const std::string& what, int err) { throw ChildError(what + ": " + std::strerror(err)); }

UniqueFd above_stdio(UniqueFd fd) {
  if (fd.get() >= 3) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) throw_child_error("fcntl(F_DUPFD_CLOEXEC)", errno);
  return UniqueFd(moved);
}

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_child_error("pipe2", errno);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  return Pipe{above_stdio(std::move(read_end)), above_stdio(std::move(write_end))};
}

SigpipeBlock::SigpipeBlock() {
  sigemptyset(&pipe_set_);
  sigaddset(&pipe_set_, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
}

SigpipeBlock::~SigpipeBlock() {
  sigset_t pending;
  if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const timespec zero{};
    while (sigtimedwait(&pipe_set_, nullptr, &zero) < 0 && errno == EINTR) {}
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

RunningChild::RunningChild(pid_t pid, bool use_pidfd) : pid_(pid) {
  if (use_pidfd) pidfd_ = UniqueFd(open_pidfd(pid));
}

RunningChild::~RunningChild() {
  if (!reaped_) {
    kill_group();
    reap();
  }
}

bool RunningChild::exited() {
  if (!exited_) {
    siginfo_t info{};
    int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if ((rc == 0 && info.si_pid == pid_) || (rc < 0 && errno == ECHILD)) exited_ = true;
  }
  return exited_;
}

void RunningChild::kill_group() {
  ::kill(-pid_, SIGKILL);
  if (!exited_) ::kill(pid_, SIGKILL);
}

std::optional<int> RunningChild::reap() {
  reaped_ = true;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return std::nullopt;
  }
  return status;
}

ChildIo::ChildIo(UniqueFd stdin_end, UniqueFd stdout_end, UniqueFd stderr_end, const ChildSpec& spec,
                 ChildResult& result)
    : spec_(spec),
      result_(result),
      stdin_(std::move(stdin_end)),
      captures_{{std::move(stdout_end), &result.stdout_data, spec.max_stdout},
                {std::move(stderr_end), &result.stderr_data, spec.max_stderr}} {
  set_nonblocking(stdin_);
  for (Capture& c : captures_) set_nonblocking(c.fd);
  if (spec.stdin_data.empty()) stdin_.reset();
}

bool ChildIo::stdout_overflowed() const { return spec_.kill_on_stdout_overflow && captures_[0].overflowed; }

void ChildIo::pump(RunningChild& child) {
  const Steady::time_point deadline = after(Steady::now(), spec_.timeout);
  std::optional<Steady::time_point> grace_deadline;
  for (;;) {
    bool exited = child.exited();
    if (exited) stdin_.reset();
    if (exited && !outputs_open()) return;
    Steady::time_point now = Steady::now();
    if (now >= deadline || stdout_overflowed()) {
      (now >= deadline ? result_.timed_out : result_.killed_for_output) = true;
      child.kill_group();
      return;
    }
    if (exited && !grace_deadline) grace_deadline = after(now, spec_.exit_grace);
    if (grace_deadline && now >= *grace_deadline) {
      child.kill_group();
      return;
    }
    Steady::time_point wake = grace_deadline ? std::min(deadline, *grace_deadline) : deadline;
    if (!exited && child.pidfd() < 0) wake = std::min(wake, now + kExitPollTick);
    wait_and_service(exited ? -1 : child.pidfd(), poll_timeout_ms(wake - now));
  }
}

void ChildIo::finish() {
  stdin_.reset();
  for (Capture& c : captures_) {
    for (int round = 0; round < kFinalDrainRounds && !result_.killed_for_output; ++round) {
      if (read_available(c, result_.output_truncated)) break;
    }
    c.fd.reset();
  }
}

/// One poll over stdin, both outputs and (when >= 0) the pidfd, then services what is ready.
void ChildIo::wait_and_service(int pidfd, int timeout_ms) {
  pollfd fds[4];
  nfds_t count = 0;
  int stdin_slot = -1, capture_slot[2] = {-1, -1};
  if (stdin_.valid()) {
    stdin_slot = static_cast<int>(count);
    fds[count++] = {stdin_.get(), POLLOUT, 0};
  }
  for (int i = 0; i < 2; ++i) {
    if (!captures_[i].fd.valid()) continue;
    capture_slot[i] = static_cast<int>(count);
    fds[count++] = {captures_[i].fd.get(), POLLIN, 0};
  }
  if (pidfd >= 0) fds[count++] = {pidfd, POLLIN, 0};
  if (::poll(fds, count, timeout_ms) < 0) {
    if (errno == EINTR) return;
    throw_child_error("poll", errno);
  }
  if (stdin_slot >= 0 && fds[stdin_slot].revents != 0) {
    write_available(stdin_, spec_.stdin_data, stdin_offset_);
  }
  for (int i = 0; i < 2; ++i) {
    if (capture_slot[i] >= 0 && fds[capture_slot[i]].revents != 0) {
      read_available(captures_[i], result_.output_truncated);
    }
  }
}

void record_status(std::optional<int> status, ChildResult& result) {
  if (status && WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  } else if (status && WIFSIGNALED(*status)) {
    result.term_signal = WTERMSIG(*status);
  }
}

}  // namespace manifold::util::detail
