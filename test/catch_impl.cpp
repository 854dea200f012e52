// The Catch2 (v2, single header) implementation and main(), compiled once for every Catch2 test
// executable: the unit tests and the root-only integration suites (netlink, firewall, scoping).
// main() exits 1 on a failure, 77 (CTest's SKIP_RETURN_CODE) when a root-only test skipped itself
// (integration/root_skip.h; unit tests never do), else 0. Compiling the implementation once
// instead of in every suite saves about a minute of CI build time under the sanitizers.
#define CATCH_CONFIG_RUNNER
#include "integration/root_skip.h"

int main(int argc, char** argv) {
  if (Catch::Session().run(argc, argv) != 0) return 1;
  return manifold::itest::skipped ? manifold::itest::kSkipExitCode : 0;
}
