// run_child and run_detached (see child_process.h): starting the child, the ETXTBSY retries and
// the detached double fork; the parent's stdio loop is in child_process_io.cpp. A child that stays
// in our network namespace is started with posix_spawn: glibc clones it vfork-style, without
// copying our page tables as fork does, and reports exec errors as its return value. Entering a
// namespace needs a setns that posix_spawn cannot do, so that child is forked; it may be forked
// from a multi-threaded process, so between fork and execve it makes only async-signal-safe calls
// on data prepared before the fork, and a close-on-exec report pipe tells the parent which step
// failed and why.
#include "util/child_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/child_process_io.h"

namespace manifold::util {

namespace {

using detail::Pipe;

/// Descriptors closed one by one in a child when the kernel lacks close_range (before 5.9) stop
/// at the soft descriptor limit, and at most this.
constexpr rlim_t kMaxFdScan = 65536;

/// Everything the child needs, prepared before it is started (a forked child must not allocate).
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int netns_fd;
  int stdio[3];
  int report_fd;
  int max_fd;
};

/// The outcome of one attempt to start the child.
struct Started {
  pid_t pid = -1;
  ChildStep step = ChildStep::None;
  int err = 0;
};

int highest_fd_to_close() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return kMaxFdScan - 1;
  return static_cast<int>(std::min(lim.rlim_cur, kMaxFdScan) - 1);
}

/// Closes every descriptor from `first` up (async-signal-safe).
void close_from(int first, int max_fd) {
  if (::close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd <= max_fd; ++fd) ::close(fd);
}

/// In the child: reports the failed step and errno to the parent and exits.
[[noreturn]] void child_fail(int report_fd, ChildStep step) {
  const int msg[2] = {static_cast<int>(step), errno};
  [[maybe_unused]] ssize_t n = ::write(report_fd, msg, sizeof msg);
  ::_exit(127);
}

/// In the child: default signal dispositions and an empty mask, a process group of its own, the
/// network namespace, stdio, the report pipe moved to fd 3 (close-on-exec), everything else
/// closed, execve. Async-signal-safe calls only.
[[noreturn]] void child_main(const ChildPlan& p) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::setpgid(0, 0);
  if (p.netns_fd >= 0 && ::setns(p.netns_fd, CLONE_NEWNET) != 0) child_fail(p.report_fd, ChildStep::Netns);
  for (int target = 0; target < 3; ++target) {
    if (::dup2(p.stdio[target], target) < 0) child_fail(p.report_fd, ChildStep::Stdio);
  }
  int report = p.report_fd;
  if (report != 3) {
    if (::dup3(report, 3, O_CLOEXEC) < 0) child_fail(report, ChildStep::Stdio);
    report = 3;
  }
  close_from(4, p.max_fd);
  ::execve(p.path, p.argv, p.envp);
  child_fail(report, ChildStep::Exec);
}

/// Forks a child running `plan` and waits until it has exec'd (the close-on-exec report pipe
/// closes) or reported a failure (then it is reaped here).
Started fork_and_exec(ChildPlan plan) {
  Pipe report = detail::make_pipe();
  plan.report_fd = report.write_end.get();
  const pid_t pid = ::fork();
  if (pid < 0) return {-1, ChildStep::Fork, errno};
  if (pid == 0) child_main(plan);
  report.write_end.reset();
  int msg[2] = {0, 0};
  ssize_t got;
  do {
    got = ::read(report.read_end.get(), msg, sizeof msg);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof msg)) return {pid, ChildStep::None, 0};
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
  return {-1, static_cast<ChildStep>(msg[0]), msg[1]};
}

void check_spawn(int rc, const char* what) {
  if (rc != 0) detail::throw_child_error(what, rc);
}

/// posix_spawn attributes: new process group, empty signal mask, every signal at its default.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    check_spawn(posix_spawnattr_init(&attr_), "posix_spawnattr_init");
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    try {
      check_spawn(
          posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
          "posix_spawnattr_setflags");
      check_spawn(posix_spawnattr_setpgroup(&attr_, 0), "posix_spawnattr_setpgroup");
      check_spawn(posix_spawnattr_setsigmask(&attr_, &none), "posix_spawnattr_setsigmask");
      check_spawn(posix_spawnattr_setsigdefault(&attr_, &all), "posix_spawnattr_setsigdefault");
    } catch (...) {
      posix_spawnattr_destroy(&attr_);
      throw;
    }
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

/// posix_spawn file actions: the three stdio sources become 0/1/2, every fd from 3 up is closed.
class SpawnFileActions {
 public:
  explicit SpawnFileActions(const int (&stdio)[3]) {
    check_spawn(posix_spawn_file_actions_init(&actions_), "posix_spawn_file_actions_init");
    try {
      for (int target = 0; target < 3; ++target) {
        check_spawn(posix_spawn_file_actions_adddup2(&actions_, stdio[target], target),
                    "posix_spawn_file_actions_adddup2");
      }
      check_spawn(posix_spawn_file_actions_addclosefrom_np(&actions_, 3), "posix_spawn_file_actions_addclosefrom_np");
    } catch (...) {
      posix_spawn_file_actions_destroy(&actions_);
      throw;
    }
  }
  ~SpawnFileActions() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnFileActions(const SpawnFileActions&) = delete;
  SpawnFileActions& operator=(const SpawnFileActions&) = delete;
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

/// Starts a child that stays in our network namespace with posix_spawn.
Started spawn(const ChildPlan& plan) {
  SpawnAttributes attributes;
  SpawnFileActions actions(plan.stdio);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, plan.path, actions.get(), attributes.get(), plan.argv, plan.envp);
  if (rc != 0) return {-1, ChildStep::Exec, rc};
  return {pid, ChildStep::None, 0};
}

/// spawn or (to enter a network namespace) fork_and_exec, retrying ETXTBSY with a doubling
/// back-off.
Started start(const ChildSpec& spec, const ChildPlan& plan, Sleeper& sleeper) {
  for (int attempt = 0;; ++attempt) {
    Started started = plan.netns_fd >= 0 ? fork_and_exec(plan) : spawn(plan);
    if (started.step != ChildStep::Exec || started.err != ETXTBSY || attempt >= spec.text_busy_retries) return started;
    sleeper.sleep_for(spec.text_busy_backoff * (1 << attempt));
  }
}

/// A NULL-terminated char* array viewing a vector of strings (which must outlive it).
std::vector<char*> c_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

/// `fd` when it is above the stdio numbers, else a close-on-exec copy above them kept in `copy`.
int above_stdio_borrowed(int fd, UniqueFd& copy) {
  if (fd >= 3) return fd;
  copy = UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!copy.valid()) detail::throw_child_error("fcntl(F_DUPFD_CLOEXEC)", errno);
  return copy.get();
}

ChildResult start_failure(ChildStep step, int err) {
  ChildResult r;
  r.failed_step = step;
  r.start_errno = err;
  return r;
}

}  // namespace

ChildResult run_child(const ChildSpec& spec, Sleeper& sleeper) {
  const std::vector<std::string> argv = spec.argv.empty() ? std::vector<std::string>{spec.path} : spec.argv;
  if (spec.path.empty() || has_nul(spec.path) || std::any_of(argv.begin(), argv.end(), has_nul) ||
      std::any_of(spec.env.begin(), spec.env.end(), has_nul)) {
    return start_failure(ChildStep::Exec, EINVAL);
  }
  detail::SigpipeBlock sigpipe_block;
  Pipe in = detail::make_pipe(), out = detail::make_pipe(), err = detail::make_pipe();
  UniqueFd stdin_copy, stdout_copy;
  const int child_in = spec.stdin_fd >= 0 ? above_stdio_borrowed(spec.stdin_fd, stdin_copy) : in.read_end.get();
  const int child_out = spec.stdout_fd >= 0 ? above_stdio_borrowed(spec.stdout_fd, stdout_copy) : out.write_end.get();
  const std::vector<char*> c_argv = c_array(argv), c_env = c_array(spec.env);
  const ChildPlan plan{
      spec.path.c_str(),    c_argv.data(), c_env.data(), spec.netns_fd, {child_in, child_out, err.write_end.get()}, -1,
      highest_fd_to_close()};
  const Started started = start(spec, plan, sleeper);
  if (started.step != ChildStep::None) return start_failure(started.step, started.err);

  detail::RunningChild child(started.pid, spec.use_pidfd);
  in.read_end.reset();
  out.write_end.reset();
  err.write_end.reset();
  if (spec.stdin_fd >= 0) in.write_end.reset();
  if (spec.stdout_fd >= 0) out.read_end.reset();
  ChildResult result;
  detail::ChildIo io(std::move(in.write_end), std::move(out.read_end), std::move(err.read_end), spec, result);
  io.pump(child);
  io.finish();
  detail::record_status(child.reap(), result);
  return result;
}

ChildResult run_child(const ChildSpec& spec) {
  RealSleeper sleeper;
  return run_child(spec, sleeper);
}

bool run_detached(const std::function<void()>& work) {
  const int max_fd = highest_fd_to_close();
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);  // the intermediate child; the grandchild is adopted by init
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
      if (null >= 0) ::dup2(null, fd);
    }
    close_from(3, max_fd);  // the runtime's pipes and our sockets must not stay open here
    work();
    ::_exit(0);
  }
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {}
  return true;
}

}  // namespace manifold::util
