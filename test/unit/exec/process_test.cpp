// Tests for lib/exec/process: RealProcessRunner against tiny /bin/sh scripts written to a temp dir
// (exit codes, argv/env, 4 MiB stdin echo, chatty stderr, output cap, timeouts that kill the whole
// process group, fd hygiene, ETXTBSY retries with a fake sleeper, exec failures) and the
// FakeProcessRunner used by command tests.
#include "exec/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "cni/error.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using manifold::exec::FakeProcessRunner;
using manifold::exec::ProcessRequest;
using manifold::exec::ProcessResult;
using manifold::exec::RealProcessRunner;
using manifold::util::FakeSleeper;
using namespace std::chrono_literals;
using manifold::test::TempDir;

namespace {

ProcessRequest request_for(const std::string& path) {
  ProcessRequest r;
  r.path = path;
  r.env = {"PATH=/usr/bin:/bin"};
  r.timeout = 30s;
  return r;
}

/// True once `pid` is gone or a zombie; polls up to 20 s (only to wait for the kernel to finish a
/// SIGKILL already sent, never to let something "probably" happen).
bool process_dead(pid_t pid) {
  for (int i = 0; i < 2000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    size_t close_paren = line.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < line.size() && line[close_paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::string random_bytes(size_t n) {
  std::mt19937 gen(42);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

}  // namespace

TEST_CASE("process: exit code, arguments and a clean environment reach the child", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  ProcessRequest req = request_for(dir.script("p", "echo \"$1|$FOO|${HOME-unset}\"; exit 3"));
  req.argv = {"p", "first"};
  req.env = {"FOO=bar baz"};
  ProcessResult r = runner.run(req);
  CHECK(r.exit_code == 3);
  CHECK(r.term_signal == 0);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exec_errno == 0);
  CHECK(r.stdout_data == "first|bar baz|unset\n");
}

TEST_CASE("process: argv 0 is passed as given, and defaults to the path", "[exec]") {
  RealProcessRunner runner;
  ProcessRequest req = request_for("/bin/sh");
  req.argv = {"custom-argv0", "-c", "tr '\\0' '\\n' < /proc/$$/cmdline | head -n 1"};
  CHECK(runner.run(req).stdout_data == "custom-argv0\n");
  req.argv.clear();  // sh then reads its commands from stdin
  req.stdin_data = "tr '\\0' '\\n' < /proc/$$/cmdline | head -n 1\n";
  CHECK(runner.run(req).stdout_data == "/bin/sh\n");
}

TEST_CASE("process: 4 MiB of stdin is echoed back without deadlock", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  ProcessRequest req = request_for(dir.script("cat", "exec cat"));
  req.stdin_data = random_bytes(4u << 20);
  ProcessResult r = runner.run(req);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.output_truncated);
  CHECK(r.stdout_data.size() == req.stdin_data.size());
  CHECK(r.stdout_data == req.stdin_data);
}

TEST_CASE("process: a chatty stderr before reading stdin does not deadlock", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  ProcessRequest req = request_for(dir.script("p", "head -c 1048576 /dev/zero >&2; wc -c; echo done >&2"));
  req.stdin_data = std::string(4u << 20, 'x');
  ProcessResult r = runner.run(req);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_data.find("4194304") != std::string::npos);
  CHECK(r.stderr_data.size() == (1u << 20) + 5);
  CHECK(r.stderr_data.substr(r.stderr_data.size() - 5) == "done\n");
}

TEST_CASE("process: a child that ignores stdin does not kill us with SIGPIPE", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  ProcessRequest req = request_for(dir.script("p", "exec 0<&-; echo ok"));
  req.stdin_data = std::string(4u << 20, 'x');
  ProcessResult r = runner.run(req);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_data == "ok\n");
  sigset_t pending;
  REQUIRE(sigpending(&pending) == 0);
  CHECK(sigismember(&pending, SIGPIPE) == 0);
}

TEST_CASE("process: output beyond max_output is drained and dropped", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  ProcessRequest req = request_for(dir.script("p", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2; exit 5"));
  req.max_output = 1000;
  ProcessResult r = runner.run(req);
  CHECK(r.exit_code == 5);  // the child was not blocked by a full pipe
  CHECK(r.output_truncated);
  CHECK(r.stdout_data.size() == 1000);
  CHECK(r.stderr_data.size() == 1000);
}

TEST_CASE("process: output exactly at the cap is not truncated", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  ProcessRequest req = request_for(dir.script("p", "printf 12345"));
  req.max_output = 5;
  ProcessResult r = runner.run(req);
  CHECK_FALSE(r.output_truncated);
  CHECK(r.stdout_data == "12345");
}

TEST_CASE("process: timeout kills the child and reports it", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  ProcessRequest req = request_for(dir.script("p", "echo started; sleep 30"));
  req.timeout = 200ms;
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = runner.run(req);
  CHECK(r.timed_out);
  CHECK(r.term_signal == SIGKILL);
  CHECK(r.exit_code == -1);
  CHECK(r.stdout_data == "started\n");
  CHECK(std::chrono::steady_clock::now() - start < 25s);  // far below the 30 s sleep
}

TEST_CASE("process: timeout kills a grandchild that holds the pipe (process group kill)", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  ProcessRequest req = request_for(dir.script("p", "sleep 30 & echo $!; sleep 30"));
  req.timeout = 200ms;
  ProcessResult r = runner.run(req);
  CHECK(r.timed_out);
  REQUIRE_FALSE(r.stdout_data.empty());
  pid_t grandchild = std::stoi(r.stdout_data);
  CHECK(process_dead(grandchild));
}

TEST_CASE("process: a grandchild holding the pipe after the child exited is killed after the grace", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  ProcessRequest req = request_for(dir.script("p", "sleep 30 & echo $!; exit 4"));
  req.timeout = 30s;
  req.exit_grace = 100ms;
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = runner.run(req);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 4);
  CHECK(std::chrono::steady_clock::now() - start < 25s);
  REQUIRE_FALSE(r.stdout_data.empty());
  CHECK(process_dead(std::stoi(r.stdout_data)));
}

TEST_CASE("process: the child runs in its own process group", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  // Fields 1 and 5 of /proc/<shell>/stat are pid and process group ("sh" has no spaces).
  ProcessResult r = runner.run(request_for(dir.script("p", "cut -d' ' -f1,5 /proc/$$/stat")));
  REQUIRE(r.exit_code == 0);
  std::istringstream fields(r.stdout_data);
  long pid = 0, pgrp = 0;
  fields >> pid >> pgrp;
  CHECK(pid == pgrp);
  CHECK(pgrp != ::getpgrp());
}

TEST_CASE("process: the child inherits no other file descriptor", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  int null_fd = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  REQUIRE(null_fd >= 0);
  int leaky = ::fcntl(null_fd, F_DUPFD, 100);  // F_DUPFD does not set close-on-exec
  ::close(null_fd);
  REQUIRE(leaky >= 100);
  std::string script = "if [ -e /proc/$$/fd/" + std::to_string(leaky) + " ]; then echo leaked; else echo clean; fi";
  ProcessResult r = runner.run(request_for(dir.script("p", script)));
  ::close(leaky);
  CHECK(r.stdout_data == "clean\n");
}

TEST_CASE("process: death by signal is reported as term_signal", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  ProcessResult r = runner.run(request_for(dir.script("p", "kill -TERM $$")));
  CHECK(r.term_signal == SIGTERM);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("process: a missing binary is exit 127 with the errno text", "[exec]") {
  RealProcessRunner runner;
  ProcessResult r = runner.run(request_for("/nonexistent/manifold-plugin"));
  CHECK(r.exec_errno == ENOENT);
  CHECK(r.exit_code == 127);
  CHECK(r.stderr_data.find("No such file or directory") != std::string::npos);
  CHECK(r.stderr_data.find("/nonexistent/manifold-plugin") != std::string::npos);
}

TEST_CASE("process: a non-executable file is exit 126 (EACCES)", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  ProcessResult r = runner.run(request_for(dir.script("p", "echo hi", 0644)));
  CHECK(r.exec_errno == EACCES);
  CHECK(r.exit_code == 126);
  CHECK(r.stderr_data.find("Permission denied") != std::string::npos);
}

TEST_CASE("process: NUL bytes in argv or env are refused before spawning", "[exec]") {
  TempDir dir;
  RealProcessRunner runner;
  ProcessRequest req = request_for(dir.script("p", "echo hi"));
  req.env.push_back(std::string("BAD=a\0b", 7));
  ProcessResult r = runner.run(req);
  CHECK(r.exec_errno == EINVAL);
  CHECK(r.exit_code == 126);
  CHECK(r.stdout_data.empty());
}

TEST_CASE("process: ETXTBSY is retried with a doubling back-off", "[exec]") {
  TempDir dir;
  std::string path = dir.script("busy", "echo ran");
  int writer = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // an "installer" still writing the file
  REQUIRE(writer >= 0);
  FakeSleeper sleeper;
  RealProcessRunner runner(sleeper);

  SECTION("succeeds once the writer is gone") {
    sleeper.on_sleep([&](size_t n) {
      if (n == 2) ::close(std::exchange(writer, -1));
    });
    ProcessResult r = runner.run(request_for(path));
    CHECK(r.exit_code == 0);
    CHECK(r.stdout_data == "ran\n");
    CHECK(sleeper.waits() == std::vector<std::chrono::milliseconds>{100ms, 200ms});
  }
  SECTION("gives up after five retries") {
    ProcessResult r = runner.run(request_for(path));
    CHECK(r.exec_errno == ETXTBSY);
    CHECK(r.exit_code == 126);
    CHECK(r.stderr_data.find("Text file busy") != std::string::npos);
    CHECK(sleeper.waits() == std::vector<std::chrono::milliseconds>{100ms, 200ms, 400ms, 800ms, 1600ms});
  }
  if (writer >= 0) ::close(writer);
}

TEST_CASE("process: no zombies are left behind", "[exec]") {
  TempDir dir;
  bool use_pidfd = GENERATE(true, false);  // false: the poll-tick path of kernels < 5.3
  CAPTURE(use_pidfd);
  manifold::util::RealSleeper sleeper;
  RealProcessRunner runner(sleeper, use_pidfd);
  std::string path = dir.script("p", "echo $$");
  for (int i = 0; i < 3; ++i) {
    ProcessResult r = runner.run(request_for(path));
    REQUIRE(r.exit_code == 0);
    pid_t pid = std::stoi(r.stdout_data);
    CHECK_FALSE(fs::exists("/proc/" + std::to_string(pid)));  // reaped, not a zombie child of ours
  }
}

TEST_CASE("fake process runner: records requests, answers from queue then handler", "[exec]") {
  FakeProcessRunner fake;
  ProcessResult first;
  first.exit_code = 0;
  first.stdout_data = "one";
  fake.push_result(first);
  fake.set_handler([](const ProcessRequest& req) {
    ProcessResult r;
    r.exit_code = 2;
    r.stdout_data = "handled " + req.stdin_data;
    return r;
  });
  ProcessRequest req;
  req.path = "/bin/a";
  req.stdin_data = "x";
  CHECK(fake.run(req).stdout_data == "one");
  req.path = "/bin/b";
  ProcessResult second = fake.run(req);
  CHECK(second.exit_code == 2);
  CHECK(second.stdout_data == "handled x");
  auto seen = fake.requests();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].path == "/bin/a");
  CHECK(seen[1].path == "/bin/b");
}

TEST_CASE("fake process runner: running with nothing scripted throws", "[exec]") {
  FakeProcessRunner fake;
  ProcessRequest req;
  req.path = "/bin/x";
  CHECK_THROWS_AS(fake.run(req), manifold::cni::CniError);
  CHECK(fake.requests().size() == 1);
}
