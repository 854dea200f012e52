// RealProcessRunner and FakeProcessRunner. The real runner uses posix_spawn (glibc reports exec
// errors such as ENOENT, EACCES and ETXTBSY as its return value) with the child in a new process
// group, its signal mask and dispositions reset, fds 0–2 connected to fresh pipes and every other
// fd closed. One poll loop feeds stdin and drains stdout/stderr, so neither a large stdin nor a
// chatty stderr can deadlock it. Child exit is observed without reaping (a pidfd when the kernel
// has them, otherwise waitid(WNOWAIT) on a short poll tick), so the process group id stays reserved
// until the final waitpid and killing the group can never hit an unrelated process.
#include "exec/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "cni/error.h"
#include "util/unique_fd.h"

namespace manifold::exec {

namespace {

using Clock = std::chrono::steady_clock;

/// Largest chunk moved per read()/write() call.
constexpr size_t kChunk = 64 * 1024;
/// Reads per stream per loop iteration, so a flooding child cannot starve the timeout check.
constexpr int kReadsPerWakeup = 16;
/// Poll tick used to notice child exit when the kernel has no pidfd_open (Linux < 5.3).
constexpr std::chrono::milliseconds kExitPollTick{20};
/// Read rounds spent on what is still buffered in a pipe after the loop ended (at least one full
/// pipe buffer, which Linux caps at 1 MiB for unprivileged resizes).
constexpr int kFinalDrainRounds = 4;

[[noreturn]] void throw_sys(const std::string& what, int err) {
  throw cni::CniError(cni::ErrorCode::Internal, what + ": " + std::strerror(err));
}

using Fd = util::UniqueFd;

/// Returns `fd` renumbered to >= 3 (still close-on-exec), so that the child's dup2 onto 0/1/2 can
/// never overwrite another pipe end even when manifold itself was started with 0–2 closed.
Fd above_stdio(Fd fd) {
  if (fd.get() >= 3) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) throw_sys("fcntl(F_DUPFD_CLOEXEC)", errno);
  return Fd(moved);
}

void set_nonblocking(const Fd& fd) {
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) < 0)
    throw_sys("fcntl(O_NONBLOCK)", errno);
}

/// A close-on-exec pipe.
struct Pipe {
  Fd read_end, write_end;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_sys("pipe2", errno);
  Fd read_end(fds[0]), write_end(fds[1]);
  return Pipe{above_stdio(std::move(read_end)), above_stdio(std::move(write_end))};
}

/// Blocks SIGPIPE on this thread for its lifetime and discards a SIGPIPE raised meanwhile, so a
/// child closing its stdin early shows up as EPIPE instead of killing manifold. Thread-local: the
/// process-wide disposition is left alone.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
  }
  ~SigpipeBlock() {
    sigset_t pending;
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{};
      while (sigtimedwait(&pipe_set_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_set_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

/// posix_spawn attributes: new process group, empty signal mask, every signal at its default.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    check(posix_spawnattr_init(&attr_), "posix_spawnattr_init");
    initialised_ = true;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    check(posix_spawnattr_setflags(
              &attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
          "posix_spawnattr_setflags");
    check(posix_spawnattr_setpgroup(&attr_, 0), "posix_spawnattr_setpgroup");
    check(posix_spawnattr_setsigmask(&attr_, &none), "posix_spawnattr_setsigmask");
    check(posix_spawnattr_setsigdefault(&attr_, &all), "posix_spawnattr_setsigdefault");
  }
  ~SpawnAttributes() {
    if (initialised_) posix_spawnattr_destroy(&attr_);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  static void check(int rc, const char* what) {
    if (rc != 0) throw_sys(what, rc);
  }
  posix_spawnattr_t attr_;
  bool initialised_ = false;
};

/// posix_spawn file actions: the three pipe ends become 0/1/2, every fd from 3 up is closed.
class SpawnFileActions {
 public:
  SpawnFileActions(const Fd& in, const Fd& out, const Fd& err) {
    check(posix_spawn_file_actions_init(&actions_), "posix_spawn_file_actions_init");
    initialised_ = true;
    check(posix_spawn_file_actions_adddup2(&actions_, in.get(), STDIN_FILENO), "adddup2(stdin)");
    check(posix_spawn_file_actions_adddup2(&actions_, out.get(), STDOUT_FILENO), "adddup2(stdout)");
    check(posix_spawn_file_actions_adddup2(&actions_, err.get(), STDERR_FILENO), "adddup2(stderr)");
    check(posix_spawn_file_actions_addclosefrom_np(&actions_, 3), "addclosefrom_np");
  }
  ~SpawnFileActions() {
    if (initialised_) posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnFileActions(const SpawnFileActions&) = delete;
  SpawnFileActions& operator=(const SpawnFileActions&) = delete;
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  static void check(int rc, const char* what) {
    if (rc != 0) throw_sys(std::string("posix_spawn_file_actions: ") + what, rc);
  }
  posix_spawn_file_actions_t actions_;
  bool initialised_ = false;
};

/// A NULL-terminated char* array viewing a vector of strings (which must outlive it).
std::vector<char*> c_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

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

/// A started child. Until reaped it is a process (or zombie) that pins its pid and process group
/// id; the destructor kills the group and reaps, so no exit path leaves a zombie or a runaway.
class Child {
 public:
  /// Owns `pid`; with `use_pidfd` also opens a pidfd for it when the kernel supports that.
  Child(pid_t pid, bool use_pidfd) : pid_(pid) {
    if (use_pidfd) pidfd_ = Fd(open_pidfd(pid));
  }
  ~Child() {
    if (!reaped_) {
      kill_group();
      reap();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  /// The pidfd, or -1 when the kernel has none.
  int pidfd() const { return pidfd_.get(); }
  /// True once the child has exited (checked without reaping it).
  bool exited() {
    if (!exited_) {
      siginfo_t info{};
      int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
      if ((rc == 0 && info.si_pid == pid_) || (rc < 0 && errno == ECHILD)) exited_ = true;
    }
    return exited_;
  }
  /// SIGKILLs the child's process group, and the child itself in case it left the group.
  void kill_group() {
    ::kill(-pid_, SIGKILL);
    if (!exited_) ::kill(pid_, SIGKILL);
  }
  /// Waits for the child and returns its wait status (nullopt if it was reaped elsewhere).
  std::optional<int> reap() {
    reaped_ = true;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR) return std::nullopt;
    }
    return status;
  }

 private:
  pid_t pid_;
  Fd pidfd_;
  bool exited_ = false;
  bool reaped_ = false;
};

/// One captured output stream.
struct Capture {
  Fd fd;
  std::string* data;
};

/// Reads what is available on `c` (at most kReadsPerWakeup reads), keeping at most `cap` bytes.
/// Returns true when the pipe is empty for now or closed, false when it may hold more.
bool read_available(Capture& c, size_t cap, bool& truncated) {
  char buf[kChunk];
  for (int i = 0; i < kReadsPerWakeup; ++i) {
    if (!c.fd.valid()) return true;
    ssize_t n = ::read(c.fd.get(), buf, sizeof buf);
    if (n > 0) {
      size_t got = static_cast<size_t>(n);
      size_t room = cap > c.data->size() ? cap - c.data->size() : 0;
      size_t keep = std::min(room, got);
      c.data->append(buf, keep);
      if (keep < got) truncated = true;
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
void write_available(Fd& fd, const std::string& data, size_t& offset) {
  while (fd.valid() && offset < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + offset, std::min(kChunk, data.size() - offset));
    if (n > 0) {
      offset += static_cast<size_t>(n);
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

int poll_timeout_ms(Clock::duration d) {
  if (d <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

/// `now + d`, saturating instead of overflowing for absurdly long durations.
Clock::time_point after(Clock::time_point now, std::chrono::milliseconds d) {
  constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365);
  return now + std::clamp(d, std::chrono::milliseconds::zero(), kForever);
}

ProcessResult exec_failure(const std::string& path, int err) {
  ProcessResult r;
  r.exec_errno = err;
  r.exit_code = err == ENOENT ? 127 : 126;
  r.stderr_data = "exec " + path + ": " + std::strerror(err);
  return r;
}

/// The parent's ends of a running child's stdio and the loop that services them.
class ChildIo {
 public:
  ChildIo(Pipe& in, Pipe& out, Pipe& err, const ProcessRequest& request, ProcessResult& result)
      : request_(request),
        result_(result),
        stdin_(std::move(in.write_end)),
        captures_{{std::move(out.read_end), &result.stdout_data},
                  {std::move(err.read_end), &result.stderr_data}} {
    set_nonblocking(stdin_);
    for (Capture& c : captures_) set_nonblocking(c.fd);
    if (request.stdin_data.empty()) stdin_.reset();
  }

  /// Feeds stdin and drains the outputs until the child exited and both outputs closed, the
  /// timeout expired, or outputs stayed open for exit_grace after the child exited. In the last
  /// two cases the process group is killed (and timed_out set for the first).
  void pump(Child& child) {
    const Clock::time_point deadline = after(Clock::now(), request_.timeout);
    std::optional<Clock::time_point> grace_deadline;
    for (;;) {
      bool exited = child.exited();
      if (exited) stdin_.reset();
      if (exited && !outputs_open()) return;
      Clock::time_point now = Clock::now();
      if (now >= deadline) {
        result_.timed_out = true;
        child.kill_group();
        return;
      }
      if (exited && !grace_deadline) grace_deadline = after(now, request_.exit_grace);
      if (grace_deadline && now >= *grace_deadline) {
        child.kill_group();
        return;
      }
      Clock::time_point wake = grace_deadline ? std::min(deadline, *grace_deadline) : deadline;
      if (!exited && child.pidfd() < 0) wake = std::min(wake, now + kExitPollTick);
      wait_and_service(exited ? -1 : child.pidfd(), poll_timeout_ms(wake - now));
    }
  }

  /// Keeps what is still buffered in the pipes (bounded: a process that escaped the group could
  /// refill them forever) and closes everything.
  void finish() {
    stdin_.reset();
    for (Capture& c : captures_) {
      for (int round = 0; round < kFinalDrainRounds; ++round) {
        if (read_available(c, request_.max_output, result_.output_truncated)) break;
      }
      c.fd.reset();
    }
  }

 private:
  bool outputs_open() const { return captures_[0].fd.valid() || captures_[1].fd.valid(); }

  /// One poll over stdin, both outputs and (when >= 0) the pidfd, then services what is ready.
  void wait_and_service(int pidfd, int timeout_ms) {
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
      throw_sys("poll", errno);
    }
    if (stdin_slot >= 0 && fds[stdin_slot].revents != 0) {
      write_available(stdin_, request_.stdin_data, stdin_offset_);
    }
    for (int i = 0; i < 2; ++i) {
      if (capture_slot[i] >= 0 && fds[capture_slot[i]].revents != 0) {
        read_available(captures_[i], request_.max_output, result_.output_truncated);
      }
    }
  }

  const ProcessRequest& request_;
  ProcessResult& result_;
  Fd stdin_;
  size_t stdin_offset_ = 0;
  Capture captures_[2];
};

/// Fills exit_code/term_signal from a wait status.
void record_status(std::optional<int> status, ProcessResult& result) {
  if (status && WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  } else if (status && WIFSIGNALED(*status)) {
    result.term_signal = WTERMSIG(*status);
  }
}

/// Spawns the child (new process group, default signals, the pipes on 0–2, nothing else open),
/// retrying ETXTBSY with a doubling back-off. Returns 0 and sets `pid`, or the spawn errno.
int spawn(util::Sleeper& sleeper, const std::string& path, const std::vector<std::string>& argv,
          const std::vector<std::string>& env, const Pipe& in, const Pipe& out, const Pipe& err,
          pid_t& pid) {
  SpawnAttributes attributes;
  SpawnFileActions actions(in.read_end, out.write_end, err.write_end);
  std::vector<char*> c_argv = c_array(argv), c_env = c_array(env);
  for (int attempt = 0;; ++attempt) {
    int rc = ::posix_spawn(&pid, path.c_str(), actions.get(), attributes.get(), c_argv.data(),
                           c_env.data());
    if (rc != ETXTBSY || attempt == RealProcessRunner::kTextBusyRetries) return rc;
    sleeper.sleep_for(RealProcessRunner::kTextBusyBackoff * (1 << attempt));
  }
}

}  // namespace


RealProcessRunner::RealProcessRunner() : sleeper_(own_sleeper_) {}

RealProcessRunner::RealProcessRunner(util::Sleeper& sleeper, bool use_pidfd)
    : sleeper_(sleeper), use_pidfd_(use_pidfd) {}

ProcessResult RealProcessRunner::run(const ProcessRequest& request) {
  std::vector<std::string> argv =
      request.argv.empty() ? std::vector<std::string>{request.path} : request.argv;
  if (request.path.empty() || has_nul(request.path) ||
      std::any_of(argv.begin(), argv.end(), has_nul) ||
      std::any_of(request.env.begin(), request.env.end(), has_nul)) {
    return exec_failure(request.path, EINVAL);
  }
  SigpipeBlock sigpipe_block;
  Pipe in = make_pipe(), out = make_pipe(), err = make_pipe();
  pid_t pid = -1;
  if (int spawn_err = spawn(sleeper_, request.path, argv, request.env, in, out, err, pid)) {
    return exec_failure(request.path, spawn_err);
  }
  Child child(pid, use_pidfd_);
  in.read_end.reset();
  out.write_end.reset();
  err.write_end.reset();

  ProcessResult result;
  ChildIo io(in, out, err, request, result);
  io.pump(child);
  io.finish();
  record_status(child.reap(), result);
  return result;
}

void FakeProcessRunner::push_result(ProcessResult result) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(result));
}

void FakeProcessRunner::set_handler(Handler handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

std::vector<ProcessRequest> FakeProcessRunner::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

ProcessResult FakeProcessRunner::run(const ProcessRequest& request) {
  Handler handler;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
    if (!queue_.empty()) {
      ProcessResult r = std::move(queue_.front());
      queue_.pop_front();
      return r;
    }
    handler = handler_;
  }
  if (!handler) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "FakeProcessRunner: no scripted result for " + request.path);
  }
  return handler(request);
}

}  // namespace manifold::exec
