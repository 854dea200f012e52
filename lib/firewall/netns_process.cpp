// fork/setns/execve with captured output and a deadline (see netns_process.h). The child side uses
// only async-signal-safe calls, because the parent may be multi-threaded; everything it needs
// (argv, envp, descriptors) is prepared before fork().
#include "firewall/netns_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "cni/error.h"
#include "util/unique_fd.h"

namespace manifold::firewall {

namespace {

using Clock = std::chrono::steady_clock;

using UniqueFd = util::UniqueFd;

// A forked child that is killed and reaped unless it was waited for.
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  pid_t pid() const { return pid_; }

  // Blocks until the child exits; returns its wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

[[noreturn]] void fail(const std::string& what, int err) {
  throw cni::CniError(cni::ErrorCode::Firewall, what + ": " + std::strerror(err));
}

// Descriptors 0-2 must not be used for our pipes: the child dup2()s onto them.
UniqueFd above_stdio(UniqueFd fd) {
  if (fd.get() > 2) return fd;
  const int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) fail("fcntl(F_DUPFD_CLOEXEC)", errno);
  return UniqueFd(moved);
}

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("pipe2", errno);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  UniqueFd safe_read = above_stdio(std::move(read_end));
  return {std::move(safe_read), above_stdio(std::move(write_end))};
}

std::pair<UniqueFd, UniqueFd> make_socketpair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) fail("socketpair", errno);
  UniqueFd first(fds[0]);
  UniqueFd second(fds[1]);
  UniqueFd safe_first = above_stdio(std::move(first));
  return {std::move(safe_first), above_stdio(std::move(second))};
}

UniqueFd open_netns(const std::string& path) {
  if (path.empty()) return {};
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) fail("open network namespace " + path, errno);
  struct statfs fs {};
  if (::fstatfs(fd.get(), &fs) != 0) fail("statfs network namespace " + path, errno);
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC)
    throw cni::CniError(cni::ErrorCode::Firewall, "not a network namespace: " + path);
  return above_stdio(std::move(fd));
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) fail("fcntl(O_NONBLOCK)", errno);
}

// What the child reports through the exec-error pipe when it cannot get to execve.
enum ChildStep : int { kStepSetns = 1, kStepDup = 2, kStepExec = 3 };

[[noreturn]] void child_fail(int report_fd, int step) {
  const int msg[2] = {step, errno};
  [[maybe_unused]] ssize_t n = ::write(report_fd, msg, sizeof msg);
  ::_exit(127);
}

// Runs in the forked child: only async-signal-safe calls from here on.
[[noreturn]] void child_main(int netns_fd, int in_fd, int out_fd, int err_fd, int report_fd, char* const* argv,
                             char* const* envp) {
  if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) child_fail(report_fd, kStepSetns);
  if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) child_fail(report_fd, kStepDup);
  ::close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);  // best effort: no inherited descriptor leaks in
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(argv[0], argv, envp);
  child_fail(report_fd, kStepExec);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60 * 60 * 1000));
}

// Reads what is available from `fd` into `sink` (up to `cap`, the rest dropped when `drop_excess`);
// resets `fd` at EOF. Returns false when the cap is exceeded and excess is not allowed.
bool drain(UniqueFd& fd, std::string& sink, std::size_t cap, bool drop_excess) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      const auto len = static_cast<std::size_t>(n);
      if (sink.size() + len > cap) {
        if (!drop_excess) return false;
        sink.append(buf, cap - std::min(cap, sink.size()));
      } else {
        sink.append(buf, len);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    fd.reset();  // EOF or a read error: nothing more will come
    return true;
  }
}

// Sends as much of `data` from `offset` as the socket takes now; resets `fd` when done or broken.
void feed(UniqueFd& fd, const std::string& data, std::size_t& offset) {
  while (offset < data.size()) {
    const ssize_t n = ::send(fd.get(), data.data() + offset, data.size() - offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      offset += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    break;  // the child closed its stdin (EPIPE): it does not want the rest
  }
  fd.reset();
}

// Waits for the child to exit until `deadline`; false on timeout.
bool wait_exit(pid_t pid, Clock::time_point deadline) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return true;  // no pidfd support: the caller's blocking wait follows
  for (;;) {
    pollfd p{pidfd.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;
  }
}

}  // namespace

ProcessOutput run_process(const ProcessSpec& spec) {
  if (spec.binary.empty() || spec.binary.front() != '/')
    throw cni::CniError(cni::ErrorCode::Internal, "run_process needs an absolute path, got \"" + spec.binary + "\"");
  UniqueFd netns = open_netns(spec.netns_path);
  auto [in_parent, in_child] = make_socketpair();
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  auto [report_read, report_write] = make_pipe();

  std::vector<std::string> argv_strings{spec.binary};
  argv_strings.insert(argv_strings.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> env_strings = spec.env;
  const std::vector<char*> argv = c_strings(argv_strings);
  const std::vector<char*> envp = c_strings(env_strings);

  const pid_t pid = ::fork();
  if (pid < 0) fail("fork " + spec.binary, errno);
  if (pid == 0)
    child_main(netns.get(), in_child.get(), out_write.get(), err_write.get(), report_write.get(), argv.data(),
               envp.data());
  ChildProcess child(pid);
  in_child.reset();
  out_write.reset();
  err_write.reset();
  report_write.reset();

  const Clock::time_point deadline = Clock::now() + spec.timeout;
  ProcessOutput result;
  std::size_t offset = 0;
  set_nonblocking(out_read.get());
  set_nonblocking(err_read.get());
  if (spec.stdin_data.empty()) in_parent.reset();
  while (out_read.valid() || err_read.valid()) {
    pollfd fds[3];
    nfds_t n = 0;
    const int in_slot = in_parent.valid() ? static_cast<int>(n) : -1;
    if (in_parent.valid()) fds[n++] = {in_parent.get(), POLLOUT, 0};
    const int out_slot = out_read.valid() ? static_cast<int>(n) : -1;
    if (out_read.valid()) fds[n++] = {out_read.get(), POLLIN, 0};
    const int err_slot = err_read.valid() ? static_cast<int>(n) : -1;
    if (err_read.valid()) fds[n++] = {err_read.get(), POLLIN, 0};
    const int ready = ::poll(fds, n, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail("poll on " + spec.binary, errno);
    if (ready == 0)
      throw cni::CniError(cni::ErrorCode::Firewall, spec.binary + " did not finish within " +
                                                        std::to_string(spec.timeout.count()) + " ms and was killed");
    if (in_slot >= 0 && fds[in_slot].revents != 0) feed(in_parent, spec.stdin_data, offset);
    if (out_slot >= 0 && fds[out_slot].revents != 0 && !drain(out_read, result.out, spec.max_stdout, false))
      throw cni::CniError(cni::ErrorCode::Firewall, spec.binary + " wrote more than " +
                                                        std::to_string(spec.max_stdout) + " bytes and was killed");
    if (err_slot >= 0 && fds[err_slot].revents != 0) drain(err_read, result.err, spec.max_stderr, true);
  }
  in_parent.reset();
  if (!wait_exit(child.pid(), deadline))
    throw cni::CniError(cni::ErrorCode::Firewall, spec.binary + " did not exit within " +
                                                      std::to_string(spec.timeout.count()) + " ms and was killed");
  const int status = child.wait();

  int report[2] = {0, 0};
  ssize_t got;
  do {
    got = ::read(report_read.get(), report, sizeof report);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof report)) {
    switch (report[0]) {
      case kStepSetns: fail("enter network namespace " + spec.netns_path + " for " + spec.binary, report[1]);
      case kStepDup: fail("set up stdio for " + spec.binary, report[1]);
      default: fail("execute " + spec.binary, report[1]);
    }
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace manifold::firewall
