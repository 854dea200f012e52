// Unit tests for CNI_ARGS parsing, pod identity extraction and delegate CNI_ARGS building.
#include <catch2/catch.hpp>

#include "cni/cni_args.h"
#include "cni/error.h"

using namespace manifold::cni;

TEST_CASE("CNI_ARGS parses pairs in order", "[cni]") {
  auto a = CniArgs::parse("IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=abc");
  REQUIRE(a.pairs().size() == 4);
  CHECK(a.get("K8S_POD_NAME") == std::optional<std::string>("web-0"));
  CHECK_FALSE(a.get("missing"));
  auto pod = pod_ref_from(a);
  CHECK(pod.namespace_ == "default");
  CHECK(pod.name == "web-0");
  CHECK(pod.uid == "abc");
  CHECK(pod.known());
}

TEST_CASE("CNI_ARGS tolerates empty items and values", "[cni]") {
  CHECK(CniArgs::parse("").pairs().empty());
  auto a = CniArgs::parse(";A=;B=x=y;");
  REQUIRE(a.pairs().size() == 2);
  CHECK(a.get("A") == std::optional<std::string>(""));
  CHECK(a.get("B") == std::optional<std::string>("x=y"));
  CHECK(a.str() == "A=;B=x=y");
}

TEST_CASE("CNI_ARGS rejects malformed pairs with code 4", "[cni]") {
  for (const char* bad : {"novalue", "=v", "A=1;junk", "A=\x01"}) {
    try {
      CniArgs::parse(bad);
      FAIL("accepted " << bad);
    } catch (const CniError& e) {
      CHECK(e.code() == 4);
    }
  }
  CHECK_THROWS_AS(CniArgs::parse(std::string(70000, 'a') + "=1"), CniError);
}

TEST_CASE("delegate CNI_ARGS add IgnoreUnknown and override IP/MAC", "[cni]") {
  auto a = CniArgs::parse("K8S_POD_NAME=p;IP=1.2.3.4");
  CHECK(delegate_cni_args(a, {{"IP", "10.0.0.5/24"}, {"MAC", "aa:bb:cc:dd:ee:ff"}}) ==
        "IgnoreUnknown=true;K8S_POD_NAME=p;IP=10.0.0.5/24;MAC=aa:bb:cc:dd:ee:ff");
  CHECK(delegate_cni_args(CniArgs::parse("IgnoreUnknown=1;X=y"), {}) == "IgnoreUnknown=1;X=y");
  CHECK(delegate_cni_args(CniArgs{}, {}) == "");
}
