// Unit tests for lib/netlink/error: libnl error classification and the CniError(Netlink) format.
#include "netlink/error.h"

#include <netlink/errno.h>

#include <catch2/catch.hpp>
#include <cerrno>

using namespace manifold::netlink;

TEST_CASE("libnl errors are classified as exists / not found", "[netlink]") {
  CHECK(is_exists_error(-NLE_EXIST));
  CHECK(is_exists_error(NLE_EXIST));
  CHECK_FALSE(is_exists_error(-NLE_OBJ_NOTFOUND));
  CHECK(is_not_found_error(-NLE_OBJ_NOTFOUND));  // ENOENT, ESRCH
  CHECK(is_not_found_error(-NLE_NODEV));         // ENODEV: the interface is gone
  CHECK_FALSE(is_not_found_error(-NLE_EXIST));
  CHECK_FALSE(is_not_found_error(-NLE_PERM));
  CHECK_FALSE(is_not_found_error(0));
}

TEST_CASE("netlink_error names operation, object and libnl's text", "[netlink]") {
  const manifold::cni::CniError e =
      netlink_error("add route", "10.1.0.0/24 dev #3 table 1000", -NLE_PERM, "netns /run/netns/p1");
  CHECK(e.code() == 105);
  CHECK(e.msg() == "netlink: add route 10.1.0.0/24 dev #3 table 1000: Operation not permitted");
  CHECK(e.details() == "netns /run/netns/p1");
  CHECK(nl_error_text(-NLE_EXIST) == "Object exists");

  // libnl folds many errnos into NLE_FAILURE; the kernel's errno is then shown as well.
  CHECK(netlink_error("add route", "x", -NLE_FAILURE, "", EHOSTUNREACH).msg() ==
        "netlink: add route x: Unspecific failure (No route to host)");
  CHECK(netlink_error("add route", "x", -NLE_FAILURE).msg() == "netlink: add route x: Unspecific failure");
  CHECK(netlink_error("add route", "x", -NLE_EXIST, "", EEXIST).msg() == "netlink: add route x: Object exists");

  const manifold::cni::CniError no_object = netlink_error("dump", "", -NLE_NOMEM);
  CHECK(no_object.msg() == "netlink: dump: Out of memory");
  CHECK(no_object.details().empty());
}

TEST_CASE("outcomes print", "[netlink]") {
  CHECK(to_string(AddOutcome::Added) == "added");
  CHECK(to_string(AddOutcome::Exists) == "exists");
  CHECK(to_string(DeleteOutcome::Deleted) == "deleted");
  CHECK(to_string(DeleteOutcome::NotFound) == "not found");
}
