// Tests for agent/network_diff: matching annotation elements to recorded attachments by NAD and
// interface name, unnamed elements matched in order, changed elements re-attached on their name,
// interrupted hot-plugs re-done, the cluster network and defaultNetworks never touched, and the
// lowest free secondary names for what is new.
#include "agent/network_diff.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "k8s/selection.h"

using manifold::Json;
using manifold::agent::diff_networks;
using manifold::agent::NetworkDiff;
using manifold::k8s::parse_networks_annotation;
using manifold::k8s::selection_record;
using manifold::store::AttachmentRecord;
using manifold::store::ContainerRecord;

namespace {

std::vector<manifold::k8s::SelectionElement> elements(const std::string& annotation) {
  return parse_networks_annotation(annotation, "default");
}

// A record with the cluster network on eth0, then one attachment per element of `annotation`
// on `ifnames` (each recorded with the element that produced it).
ContainerRecord record_of(const std::string& annotation, const std::vector<std::string>& ifnames,
                          const std::string& cluster_ifname = "eth0") {
  ContainerRecord r;
  r.container_id = "c1";
  r.network = "manifold";
  r.ifname = cluster_ifname;
  AttachmentRecord cluster;
  cluster.name = "cluster";
  cluster.ifname = cluster_ifname;
  cluster.cluster_network = true;
  cluster.result = "{}";
  r.attachments.push_back(cluster);
  auto es = elements(annotation);
  REQUIRE(es.size() == ifnames.size());
  for (std::size_t i = 0; i < es.size(); ++i) {
    AttachmentRecord a;
    a.name = es[i].namespace_ + "/" + es[i].name;
    a.ifname = ifnames[i];
    a.result = "{}";
    a.extra["selection"] = selection_record(es[i]);
    r.attachments.push_back(a);
  }
  return r;
}

std::vector<std::string> attach_names(const NetworkDiff& d) {
  std::vector<std::string> out;
  for (const auto& p : d.attach) out.push_back(p.element.name + "@" + p.ifname);
  return out;
}

}  // namespace

TEST_CASE("an unchanged annotation changes nothing", "[agent]") {
  auto r = record_of("a,b@data0,a", {"net1", "data0", "net3"});
  CHECK(diff_networks(elements("a,b@data0,a"), r).empty());
  // the same request in another form and key order is the same request
  CHECK(diff_networks(elements(R"([{"name":"a"},{"interface":"data0","name":"b","namespace":"default"},{"name":"a"}])"),
                      r)
            .empty());
}

TEST_CASE("a pod without secondary networks gains some on the lowest free names", "[agent]") {
  auto r = record_of("", {});
  NetworkDiff d = diff_networks(elements("a,b,c@net2"), r);
  CHECK(d.detach.empty());
  CHECK(attach_names(d) == std::vector<std::string>{"a@net1", "b@net3", "c@net2"});
}

TEST_CASE("secondary names follow the runtime's CNI_IFNAME as ADD names them", "[agent]") {
  auto r = record_of("", {}, "eth1");
  CHECK(attach_names(diff_networks(elements("a"), r)) == std::vector<std::string>{"a@eth1-1"});
}

TEST_CASE("removing an element without an interface name unplugs the attachment it made", "[agent]") {
  auto r = record_of("a,b", {"net1", "net2"});
  NetworkDiff d = diff_networks(elements("b"), r);
  CHECK(d.detach == std::vector<std::size_t>{1});
  CHECK(d.attach.empty());
}

TEST_CASE("the same NAD twice: removing one instance detaches the later attachment", "[agent]") {
  auto r = record_of("a,a", {"net1", "net2"});
  NetworkDiff d = diff_networks(elements("a"), r);
  CHECK(d.detach == std::vector<std::size_t>{2});
  CHECK(d.attach.empty());
  NetworkDiff add = diff_networks(elements("a,a,a"), r);
  CHECK(add.detach.empty());
  CHECK(attach_names(add) == std::vector<std::string>{"a@net3"});
}

TEST_CASE("a named element matches only its own interface", "[agent]") {
  auto r = record_of("a@x1", {"x1"});
  NetworkDiff d = diff_networks(elements("a@x2"), r);
  CHECK(d.detach == std::vector<std::size_t>{1});
  CHECK(attach_names(d) == std::vector<std::string>{"a@x2"});
  // an unnamed element does not take over an attachment made for an explicit name
  NetworkDiff unnamed = diff_networks(elements("a"), r);
  CHECK(unnamed.detach == std::vector<std::size_t>{1});
  CHECK(attach_names(unnamed) == std::vector<std::string>{"a@net1"});
}

TEST_CASE("an element asking for something else now is re-attached on the same name", "[agent]") {
  auto r = record_of(R"([{"name":"a","ips":["10.1.1.5/24"]},{"name":"b"}])", {"net1", "net2"});
  NetworkDiff d = diff_networks(elements(R"([{"name":"a","ips":["10.1.1.6/24"]},{"name":"b"}])"), r);
  CHECK(d.detach == std::vector<std::size_t>{1});
  REQUIRE(d.attach.size() == 1);
  CHECK(d.attach[0].ifname == "net1");
  CHECK(d.attach[0].element.ips == std::vector<std::string>{"10.1.1.6/24"});
}

TEST_CASE("an interrupted hot-plug (no result) is detached and attached again", "[agent]") {
  auto r = record_of("a", {"net1"});
  r.attachments[1].result.clear();
  NetworkDiff d = diff_networks(elements("a"), r);
  CHECK(d.detach == std::vector<std::size_t>{1});
  CHECK(attach_names(d) == std::vector<std::string>{"a@net1"});
}

TEST_CASE("the cluster network and attachments not made for the annotation are never touched", "[agent]") {
  auto r = record_of("a", {"net1"});
  AttachmentRecord default_network;  // a defaultNetworks attachment: no recorded selection
  default_network.name = "kube-system/dflt";
  default_network.ifname = "net2";
  default_network.result = "{}";
  r.attachments.insert(r.attachments.begin() + 1, default_network);
  NetworkDiff d = diff_networks(elements(""), r);
  CHECK(d.detach == std::vector<std::size_t>{2});
  // a new unnamed element skips the names the untouchable attachments hold
  NetworkDiff add = diff_networks(elements("a,b"), r);
  CHECK(attach_names(add) == std::vector<std::string>{"b@net3"});
}

TEST_CASE("a requested name is never handed to an unnamed element", "[agent]") {
  auto r = record_of("", {});
  CHECK(attach_names(diff_networks(elements("a,b@net1"), r)) == std::vector<std::string>{"a@net2", "b@net1"});
}
