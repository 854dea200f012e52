// Tests for lib/util/unique_fd: ownership through moves, reset to a new descriptor, release without
// closing, and close_checked's report.
#include "util/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>

using manifold::util::UniqueFd;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

TEST_CASE("unique fd: closes on destruction and follows moves", "[util]") {
  int raw = open_null();
  REQUIRE(raw >= 0);
  {
    UniqueFd a(raw);
    CHECK(a.valid());
    UniqueFd b(std::move(a));
    CHECK_FALSE(a.valid());
    CHECK(b.get() == raw);
    UniqueFd c;
    c = std::move(b);
    CHECK(c.get() == raw);
    CHECK(is_open(raw));
  }
  CHECK_FALSE(is_open(raw));
}

TEST_CASE("unique fd: reset takes a new descriptor, release gives one up", "[util]") {
  int first = open_null(), second = open_null();
  REQUIRE(first >= 0);
  REQUIRE(second >= 0);
  UniqueFd fd(first);
  fd.reset(second);
  CHECK_FALSE(is_open(first));
  CHECK(fd.get() == second);
  fd.reset(second);  // the same descriptor again: kept, not closed
  CHECK(is_open(second));
  int released = fd.release();
  CHECK(released == second);
  CHECK_FALSE(fd.valid());
  fd.reset();
  CHECK(is_open(second));  // released, so not closed by the owner
  ::close(second);
}

TEST_CASE("unique fd: close_checked reports success and an empty owner", "[util]") {
  UniqueFd fd(open_null());
  REQUIRE(fd.valid());
  int raw = fd.get();
  CHECK(fd.close_checked() == 0);
  CHECK_FALSE(fd.valid());
  CHECK_FALSE(is_open(raw));
  CHECK(fd.close_checked() == 0);
}
