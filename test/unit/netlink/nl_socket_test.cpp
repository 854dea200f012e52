// Unit tests for lib/netlink/nl_socket: the bounded retry of interrupted dumps (the socket itself
// is exercised against real namespaces by the integration tests).
#include "netlink/nl_socket.h"

#include <netlink/errno.h>

#include <catch2/catch.hpp>

using manifold::netlink::NlSocket;
using manifold::netlink::retry_interrupted_dump;

TEST_CASE("interrupted dumps are retried, but only a bounded number of times", "[netlink]") {
  int calls = 0;
  SECTION("success on the first attempt") {
    CHECK(retry_interrupted_dump(5, [&] {
            ++calls;
            return 0;
          }) == 0);
    CHECK(calls == 1);
  }
  SECTION("success after two interruptions") {
    CHECK(retry_interrupted_dump(5, [&] { return ++calls < 3 ? -NLE_DUMP_INTR : 0; }) == 0);
    CHECK(calls == 3);
  }
  SECTION("other errors are not retried") {
    CHECK(retry_interrupted_dump(5, [&] {
            ++calls;
            return -NLE_PERM;
          }) == -NLE_PERM);
    CHECK(calls == 1);
  }
  SECTION("constant interruption gives up") {
    CHECK(retry_interrupted_dump(NlSocket::kMaxDumpAttempts, [&] {
            ++calls;
            return -NLE_DUMP_INTR;
          }) == -NLE_DUMP_INTR);
    CHECK(calls == NlSocket::kMaxDumpAttempts);
  }
}
