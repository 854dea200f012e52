// Catch2 entry point for the root-only netlink integration tests (real network namespaces).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
