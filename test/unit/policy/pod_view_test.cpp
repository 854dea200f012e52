// Unit tests for reading pods and namespaces for policies: network-status IPs per network, named
// container ports (sidecar init containers too), metadata-only objects, and what cannot be read.
#include <catch2/catch.hpp>

#include "policy/pod_view.h"
#include "policy/policy_error.h"

using namespace manifold;
using namespace manifold::policy;

namespace {

const char* kStatus = R"([
  {"name": "cluster", "interface": "eth0", "ips": ["10.244.0.5"], "default": true},
  {"name": "default/blue", "interface": "net1", "ips": ["10.1.0.5", "2001:db8:1::5"]},
  {"name": "other/red", "interface": "net2", "ips": ["192.0.2.9/24", "garbage", 5]},
  {"interface": "net3", "ips": ["10.9.9.9"]}])";

Json pod() {
  return Json::parse(R"({
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "annotations": {}},
    "spec": {"containers": [
        {"name": "a", "ports": [{"name": "http", "containerPort": 8080},
                                {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                {"containerPort": 9000},
                                {"name": "bad", "containerPort": 0},
                                {"name": "sctp", "containerPort": 3868, "protocol": "SCTP"},
                                {"name": "odd", "containerPort": 1, "protocol": "ICMP"}]},
        {"name": "b"}],
      "initContainers": [{"name": "side", "restartPolicy": "Always", "ports": [{"name": "metrics", "containerPort": 9090}]},
                         {"name": "init", "ports": [{"name": "setup", "containerPort": 7000}]}]}})");
}

}  // namespace

TEST_CASE("policy: a pod's IPs per network come from its network-status", "[policy]") {
  Json p = pod();
  p["metadata"]["annotations"][std::string(kNetworkStatusAnnotation)] = kStatus;
  const PodView v = read_pod_view(p);
  CHECK(v.id() == "default/web");
  CHECK(v.labels == Labels{{"app", "web"}});
  REQUIRE(v.ips_on("default/blue").size() == 2);
  CHECK(v.ips_on("default/blue")[0].str() == "10.1.0.5");
  CHECK(v.ips_on("default/blue")[1].str() == "2001:db8:1::5");
  REQUIRE(v.ips_on("other/red").size() == 1);  // the prefix form is read, garbage skipped
  CHECK(v.ips_on("other/red")[0].str() == "192.0.2.9");
  CHECK(v.ips_on("cluster").size() == 1);
  CHECK(v.ips_on("default/green").empty());
}

TEST_CASE("policy: named ports of containers and sidecars, by protocol", "[policy]") {
  const PodView v = read_pod_view(pod());
  CHECK(v.ports_known);
  CHECK(v.named_ports("http", Protocol::Tcp) == std::vector<std::uint16_t>{8080});
  CHECK(v.named_ports("http", Protocol::Udp).empty());
  CHECK(v.named_ports("dns", Protocol::Udp) == std::vector<std::uint16_t>{53});
  CHECK(v.named_ports("sctp", Protocol::Sctp) == std::vector<std::uint16_t>{3868});
  CHECK(v.named_ports("metrics", Protocol::Tcp) == std::vector<std::uint16_t>{9090});  // sidecar
  CHECK(v.named_ports("setup", Protocol::Tcp).empty());                                // plain init container
  CHECK(v.named_ports("bad", Protocol::Tcp).empty());
  CHECK(v.named_ports("odd", Protocol::Tcp).empty());
  CHECK(v.ports.size() == 4);
}

TEST_CASE("policy: a metadata-only pod has labels and IPs but no known ports", "[policy]") {
  Json meta = Json::parse(R"({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
      "metadata": {"name": "peer", "namespace": "ns2", "labels": {"role": "client"}}})");
  meta["metadata"]["annotations"] = {{std::string(kNetworkStatusAnnotation), kStatus}};
  const PodView v = read_pod_view(meta);
  CHECK_FALSE(v.ports_known);
  CHECK(v.ports.empty());
  CHECK(v.ips_on("default/blue").size() == 2);
}

TEST_CASE("policy: a malformed network-status contributes no IPs", "[policy]") {
  for (const char* bad : {"", "not json", "{}", "[1, 2]", R"([{"name": "default/blue", "ips": "10.1.0.5"}])"}) {
    INFO(bad);
    const auto ips = read_network_status_ips(bad);
    CHECK((ips.empty() || ips.begin()->second.empty()));
  }
  CHECK(read_network_status_ips(std::string(2 * 1024 * 1024, '[')).empty());
}

TEST_CASE("policy: a pod or namespace whose identity or labels cannot be read is an error", "[policy]") {
  Json no_name = pod();
  no_name["metadata"].erase("name");
  CHECK_THROWS_AS(read_pod_view(no_name), PolicyError);
  Json bad_labels = pod();
  bad_labels["metadata"]["labels"] = {{"app", 1}};
  CHECK_THROWS_AS(read_pod_view(bad_labels), PolicyError);
  CHECK_THROWS_AS(read_pod_view(Json::array()), PolicyError);
  const auto [name, labels] = read_namespace(Json::parse(R"({"metadata": {"name": "team-a", "labels": {"t": "a"}}})"));
  CHECK(name == "team-a");
  CHECK(labels == Labels{{"t", "a"}});
  CHECK_THROWS_AS(read_namespace(Json::parse(R"({"metadata": {"name": "Team"}})")), PolicyError);
}
