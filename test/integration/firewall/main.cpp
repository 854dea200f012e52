// Catch2 entry point for the root-only firewall integration tests (real network namespaces); exits 77
// when a test skipped itself (root_skip.h).
#define CATCH_CONFIG_RUNNER
#include "root_skip.h"

ITEST_MAIN
