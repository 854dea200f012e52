// Tests for lib/util/child_process: what exec::RealProcessRunner and the firewall's run_process do
// not already cover through it — separate caps and the kill on stdout overflow, stdin and stdout
// redirected to files, the start report (exec and namespace failures, NUL bytes), entering a
// network namespace, ignored and blocked signals reset in the child, and run_detached. The gzip
// process compressor of the log sink is exercised here too, since it is a run_child user.
#include "util/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "temp_dir.h"
#include "util/log_file.h"
#include "util/unique_fd.h"

using manifold::test::TempDir;
using manifold::util::ChildResult;
using manifold::util::ChildSpec;
using manifold::util::ChildStep;
using manifold::util::run_child;
using manifold::util::UniqueFd;
using namespace std::chrono_literals;

namespace {

ChildSpec shell(const std::string& script) {
  ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.timeout = 30s;
  return spec;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

TEST_CASE("child process: output, exit code and separate caps", "[util]") {
  ChildResult r = run_child(shell("echo out; echo err >&2; exit 3"));
  CHECK(r.failed_step == ChildStep::None);
  CHECK(r.exit_code == 3);
  CHECK(r.stdout_data == "out\n");
  CHECK(r.stderr_data == "err\n");

  ChildSpec capped = shell("head -c 5000 /dev/zero; head -c 100 /dev/zero >&2");
  capped.max_stdout = 1000;
  capped.max_stderr = 10;
  r = run_child(capped);
  CHECK(r.exit_code == 0);
  CHECK(r.output_truncated);
  CHECK_FALSE(r.killed_for_output);
  CHECK(r.stdout_data.size() == 1000);
  CHECK(r.stderr_data.size() == 10);
}

TEST_CASE("child process: stdout beyond the cap can kill the group at once", "[util]") {
  ChildSpec flood = shell("head -c 3000000 /dev/zero; sleep 30");
  flood.max_stdout = 1 << 20;
  flood.kill_on_stdout_overflow = true;
  const auto start = std::chrono::steady_clock::now();
  ChildResult r = run_child(flood);
  CHECK(r.killed_for_output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.term_signal == SIGKILL);
  CHECK(std::chrono::steady_clock::now() - start < 20s);  // far below the 30 s sleep

  ChildSpec noisy_stderr = shell("head -c 100000 /dev/zero >&2");  // stderr never kills
  noisy_stderr.max_stderr = 100;
  noisy_stderr.kill_on_stdout_overflow = true;
  r = run_child(noisy_stderr);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.killed_for_output);
}

TEST_CASE("child process: stdin and stdout can be files instead of pipes", "[util]") {
  TempDir dir;
  const std::string src = dir.write("in", "hello file\n");
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd out(::open((dir.path() / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE(in.valid());
  REQUIRE(out.valid());
  ChildSpec spec = shell("cat; echo note >&2");
  spec.stdin_fd = in.get();
  spec.stdout_fd = out.get();
  spec.stdin_data = "ignored";
  ChildResult r = run_child(spec);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_data.empty());
  CHECK(r.stderr_data == "note\n");
  CHECK(slurp((dir.path() / "out").string()) == "hello file\n");
}

TEST_CASE("child process: start failures name the step and errno", "[util]") {
  ChildSpec missing;
  missing.path = "/nonexistent/manifold-helper";
  ChildResult r = run_child(missing);
  CHECK(r.failed_step == ChildStep::Exec);
  CHECK(r.start_errno == ENOENT);
  CHECK(r.exit_code == -1);

  ChildSpec nul = shell("true");
  nul.env.push_back(std::string("A=b\0c", 5));
  r = run_child(nul);
  CHECK(r.failed_step == ChildStep::Exec);
  CHECK(r.start_errno == EINVAL);

  UniqueFd not_ns(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ChildSpec bad_ns = shell("echo ran");
  bad_ns.netns_fd = not_ns.get();
  r = run_child(bad_ns);
  CHECK(r.failed_step == ChildStep::Netns);
  CHECK(r.start_errno == EINVAL);
  CHECK(r.stdout_data.empty());
}

TEST_CASE("child process: the child enters the given network namespace", "[util]") {
  UniqueFd ours(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  REQUIRE(ours.valid());
  ChildSpec spec = shell("readlink /proc/self/ns/net");
  spec.netns_fd = ours.get();
  ChildResult r = run_child(spec);
  if (::geteuid() != 0) {  // setns needs CAP_SYS_ADMIN even into our own namespace
    CHECK(r.failed_step == ChildStep::Netns);
    CHECK(r.start_errno == EPERM);
    return;
  }
  CHECK(r.failed_step == ChildStep::None);
  char link[128] = {};
  REQUIRE(::readlink("/proc/self/ns/net", link, sizeof link - 1) > 0);
  CHECK(r.stdout_data == std::string(link) + "\n");
}

TEST_CASE("child process: ignored and blocked signals are reset in the child", "[util]") {
  // Both ways of starting: posix_spawn, and fork when entering a namespace (our own; root only).
  const bool enter_netns = GENERATE(false, true);
  CAPTURE(enter_netns);
  if (enter_netns && ::geteuid() != 0) return;
  UniqueFd ours(enter_netns ? ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC) : -1);
  auto run = [&](const std::string& script) {
    ChildSpec spec = shell(script);
    spec.netns_fd = ours.get();
    return run_child(spec);
  };
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(::sigaction(SIGUSR1, &ignore, &old_action) == 0);
  sigset_t usr2, old_mask;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, &old_mask);
  ChildResult ignored = run("kill -USR1 $$; echo survived");
  ChildResult blocked = run("kill -USR2 $$; echo survived");
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGUSR1, &old_action, nullptr);
  CHECK(ignored.term_signal == SIGUSR1);
  CHECK(blocked.term_signal == SIGUSR2);
  CHECK(ignored.stdout_data.empty());
}

TEST_CASE("child process: the child has its own process group and no other descriptor", "[util]") {
  const bool enter_netns = GENERATE(false, true);
  CAPTURE(enter_netns);
  if (enter_netns && ::geteuid() != 0) return;
  UniqueFd ours(enter_netns ? ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC) : -1);
  int null_fd = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  REQUIRE(null_fd >= 0);
  UniqueFd leaky(::fcntl(null_fd, F_DUPFD, 100));
  ::close(null_fd);
  REQUIRE(leaky.get() >= 100);
  // Fields 1 and 5 of /proc/<shell>/stat are pid and process group ("sh" has no spaces).
  ChildSpec stat = shell("cut -d' ' -f1,5 /proc/$$/stat");
  stat.netns_fd = ours.get();
  ChildResult r = run_child(stat);
  REQUIRE(r.exit_code == 0);
  std::istringstream fields(r.stdout_data);
  long pid = 0, pgrp = 0;
  fields >> pid >> pgrp;
  CHECK(pid == pgrp);
  CHECK(pgrp != ::getpgrp());
  // ls lists its own descriptors: stdio and the one it reads the directory with.
  ChildSpec ls;
  ls.path = "/bin/ls";
  ls.argv = {"ls", "/proc/self/fd"};
  ls.netns_fd = ours.get();
  r = run_child(ls);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_data == "0\n1\n2\n3\n");
}

TEST_CASE("child process: run_detached runs the work in another, unwaited process", "[util]") {
  TempDir dir;
  const std::string marker = (dir.path() / "marker").string();
  const pid_t self = ::getpid();
  REQUIRE(manifold::util::run_detached(
      [&] { std::ofstream(marker) << (::getpid() != self ? "other" : "same") << " " << ::getppid(); }));
  std::string text;
  for (int i = 0; i < 1000 && text.empty(); ++i) {  // the grandchild runs on its own schedule
    std::this_thread::sleep_for(10ms);
    text = slurp(marker);
  }
  CHECK(text.rfind("other ", 0) == 0);
  CHECK(text != "other " + std::to_string(self));  // not our child: adopted elsewhere
}

TEST_CASE("child process: the gzip process compressor writes gzip data", "[util]") {
  if (::access("/usr/bin/gzip", X_OK) != 0 && ::access("/bin/gzip", X_OK) != 0) {
    WARN("no gzip executable: skipped");
    return;
  }
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string src = dir.write("log", text), dst = (dir.path() / "log.gz").string();
  auto compressor = manifold::util::make_gzip_process_compressor();
  CHECK(compressor->name() == "gzip process");
  compressor->gzip_file(src, dst);
  UniqueFd gz(::open(dst.c_str(), O_RDONLY | O_CLOEXEC));
  ChildSpec unzip;
  unzip.path = ::access("/usr/bin/gzip", X_OK) == 0 ? "/usr/bin/gzip" : "/bin/gzip";
  unzip.argv = {"gzip", "-dc"};
  unzip.stdin_fd = gz.get();
  ChildResult r = run_child(unzip);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_data == text);
  CHECK_THROWS_WITH(compressor->gzip_file(src, dst), Catch::Contains("cannot create " + dst));
}
