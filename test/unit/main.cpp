// Catch2 entry point for the unit-test binary. Every other file in test/unit holds test cases for
// the lib/ file it mirrors; none of them needs root, the network or a real Kubernetes API.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
