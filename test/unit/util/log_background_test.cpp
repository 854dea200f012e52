// Unit tests for where a rotated log is compressed: the sink hands the work to its BackgroundRunner
// and returns before it is done (a CNI call that crosses maxSize is not made longer by gzip), and the
// real DetachedProcessRunner does the work in another process, with none of the caller's
// descriptors, and without leaving the caller a child to wait for.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "temp_dir.h"
#include "util/log_file.h"

using namespace manifold;
using namespace manifold::util;
namespace fs = std::filesystem;

namespace {

/// Holds the work instead of running it.
class HeldRunner final : public BackgroundRunner {
 public:
  void run(std::function<void()> work) override { jobs.push_back(std::move(work)); }
  std::vector<std::function<void()>> jobs;
};

/// Counts compressions.
class CountingCompressor final : public Compressor {
 public:
  void gzip_file(const std::string& src, const std::string& dst) override {
    ++calls;
    std::ifstream in(src, std::ios::binary);
    std::ofstream(dst, std::ios::binary) << "GZ:" << in.rdbuf();
  }
  std::string name() const override { return "counting"; }
  int calls = 0;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Waits (bounded, generously) until `p` exists; the detached process finishes on its own time.
bool appears(const fs::path& p) {
  for (int i = 0; i < 2000 && !fs::exists(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return fs::exists(p);
}

}  // namespace

TEST_CASE("a rotation queues the compression instead of doing it in the writing call", "[util]") {
  test::TempDir dir;
  auto path = (dir.path() / "cni.log").string();
  auto compressor = std::make_shared<CountingCompressor>();
  auto held = std::make_shared<HeldRunner>();
  RotationPolicy policy;
  policy.max_size_bytes = 100;
  policy.max_backups = 0;
  policy.max_age_days = 0;
  FileLogSink sink(path, policy, std::make_shared<FakeWallClock>(std::chrono::system_clock::from_time_t(1767323045)),
                   compressor, held);
  for (int i = 0; i < 3; ++i) sink.write_line(std::string(49, 'a' + i) + "\n");
  auto backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  CHECK(fs::path(backups[0]).extension() == ".log");  // still plain: nothing was compressed yet
  CHECK(compressor->calls == 0);
  REQUIRE(held->jobs.size() == 1);
  held->jobs[0]();
  CHECK(compressor->calls == 1);
  backups = list_log_backups(path);
  REQUIRE(backups.size() == 1);
  CHECK(fs::path(backups[0]).extension() == ".gz");
  CHECK(read(backups[0]).rfind("GZ:" + std::string(49, 'a'), 0) == 0);
}

TEST_CASE("the detached runner works in another process without the caller's descriptors", "[util]") {
  test::TempDir dir;
  const fs::path out = dir.path() / "out";
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, 0) == 0);  // not close-on-exec: the work must still not see it
  const pid_t caller = ::getpid();
  DetachedProcessRunner runner;
  runner.run([&] {
    std::ofstream o(out.string() + ".tmp");
    o << (::getpid() != caller) << ' ' << (::fcntl(pipe_fds[1], F_GETFD) == -1) << ' '
      << (::getsid(0) != ::getsid(caller));
    o.close();
    fs::rename(out.string() + ".tmp", out);
  });
  // The caller has no child left to wait for: the intermediate one was reaped, the worker is not ours.
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  REQUIRE(appears(out));
  CHECK(read(out) == "1 1 1");
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}
