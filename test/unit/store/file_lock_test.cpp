// Tests for lib/store/file_lock: FileLock creation mode, exclusion, the bounded wait, re-locking a
// file another holder deleted, refusal of non-regular lock files, and UniqueFd ownership.
#include "store/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cni/error.h"
#include "temp_dir.h"
#include "cni_error_of.h"

namespace fs = std::filesystem;
using manifold::cni::CniError;
using manifold::store::FileLock;
using manifold::store::UniqueFd;
using manifold::util::FakeSleeper;
using namespace std::chrono_literals;
using manifold::test::code_of;
using manifold::test::TempDir;

namespace {

bool flock_held(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  return ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

}  // namespace

TEST_CASE("file lock: creates a 0600 file and holds an exclusive flock until destroyed", "[store]") {
  TempDir dir;
  fs::path path = dir.path() / "c.lock";
  mode_t old = ::umask(0);
  FakeSleeper sleeper;
  auto lock = FileLock::acquire(path, 1s, sleeper);
  ::umask(old);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(flock_held(path));
  CHECK(lock->path() == path);
  lock.reset();
  CHECK_FALSE(flock_held(path));
  CHECK(sleeper.waits().empty());
}

TEST_CASE("file lock: a busy lock is waited for, then given up with TryAgainLater", "[store]") {
  TempDir dir;
  fs::path path = dir.path() / "c.lock";
  FakeSleeper sleeper;
  auto held = FileLock::acquire(path, 1s, sleeper);

  SECTION("acquired once the holder lets go") {
    sleeper.on_sleep([&](size_t n) {
      if (n == 3) held.reset();
    });
    auto second = FileLock::acquire(path, 1s, sleeper);
    CHECK(sleeper.waits() == std::vector<std::chrono::milliseconds>{1ms, 2ms, 4ms});
    CHECK(flock_held(path));
  }
  SECTION("zero timeout fails at once") {
    CHECK(code_of([&] { FileLock::acquire(path, 0ms, sleeper); }) == 11);
    CHECK(sleeper.waits().empty());
  }
  SECTION("the pauses add up to exactly the timeout, each capped") {
    CHECK(code_of([&] { FileLock::acquire(path, 500ms, sleeper); }) == 11);
    std::chrono::milliseconds total{0};
    for (auto p : sleeper.waits()) {
      CHECK(p <= FileLock::kMaxBackoff);
      total += p;
    }
    CHECK(total == 500ms);
  }
}

TEST_CASE("file lock: a waiter whose file was deleted by the holder locks a fresh one", "[store]") {
  TempDir dir;
  fs::path path = dir.path() / "c.lock";
  FakeSleeper sleeper;
  auto held = FileLock::acquire(path, 1s, sleeper);
  sleeper.on_sleep([&](size_t n) {
    if (n == 1) {  // the waiter has the old file open: the holder removes it and lets go
      held->unlink_file();
      held.reset();
    }
  });
  auto fresh = FileLock::acquire(path, 1s, sleeper);
  // (Inode numbers cannot tell the files apart: the old one is freed before the new one is made.)
  CHECK(sleeper.waits().size() == 1);
  CHECK(flock_held(path));  // the lock is on the file now at the path, which others will open
  fresh->unlink_file();
  CHECK_FALSE(fs::exists(path));
  CHECK_NOTHROW(fresh->unlink_file());  // already gone is fine
}

TEST_CASE("file lock: a directory or symlink in place of the lock file is an I/O error", "[store]") {
  TempDir dir;
  FakeSleeper sleeper;
  fs::create_directory(dir.path() / "d.lock");
  CHECK(code_of([&] { FileLock::acquire(dir.path() / "d.lock", 1s, sleeper); }) == 5);
  fs::create_symlink(dir.path() / "target", dir.path() / "s.lock");
  CHECK(code_of([&] { FileLock::acquire(dir.path() / "s.lock", 1s, sleeper); }) == 5);
  CHECK_FALSE(fs::exists(dir.path() / "target"));
  CHECK(code_of([&] { FileLock::acquire(dir.path() / "missing" / "x.lock", 1s, sleeper); }) == 5);
}

TEST_CASE("unique fd: closes on destruction and on move-assignment", "[store]") {
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(raw >= 0);
  {
    UniqueFd a(raw);
    UniqueFd b(std::move(a));
    CHECK_FALSE(a.valid());
    CHECK(b.get() == raw);
    int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(other >= 0);
    b = UniqueFd(other);
    CHECK(::fcntl(raw, F_GETFD) == -1);  // the first descriptor was closed
    CHECK(b.close_checked() == 0);
    CHECK(::fcntl(other, F_GETFD) == -1);
    CHECK_FALSE(b.valid());
  }
}
