// Catch2 entry point for the scoping integration binary (root, real network namespaces).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
