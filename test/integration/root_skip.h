// Skips in the root-only Catch2 suites (netlink, firewall, scoping). Catch2 v2 has no SKIP: a test
// that cannot run here (not root, no working `ip netns`, an iptables backend's binaries unusable)
// calls ITEST_SKIP, which warns and returns, and main() (test/catch_impl.cpp) then exits 77,
// which CTest's SKIP_RETURN_CODE reports as "Skipped" instead of a silent pass. With CI=true in
// the environment ITEST_SKIP fails the test instead: in CI every root test must run.
#pragma once

#include <catch2/catch.hpp>

#include <cctype>
#include <cstdlib>
#include <string>

namespace manifold::itest {

/// The exit status CTest's SKIP_RETURN_CODE is set to.
inline constexpr int kSkipExitCode = 77;

/// True when CI is "true", "1" or "yes" (any case).
inline bool in_ci() {
  const char* value = std::getenv("CI");
  std::string v = value ? value : "";
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1" || v == "yes";
}

/// Set once a test of this run skipped itself.
inline bool skipped = false;

}  // namespace manifold::itest

/// Ends the current test as skipped (outside CI) or failed (CI=true), saying why.
#define ITEST_SKIP(why)                                                        \
  do {                                                                         \
    if (::manifold::itest::in_ci()) FAIL("cannot run under CI=true: " << why); \
    ::manifold::itest::skipped = true;                                         \
    WARN("skipped: " << why);                                                  \
    return;                                                                    \
  } while (false)
