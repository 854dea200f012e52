// Unit tests for the inspect views: list table and JSON, one container's text and JSON with IPs,
// MAC and gateways decoded from cached results of different versions, scoping state, unreadable
// entries, and redaction of secrets in cached delegate configs.
#include <catch2/catch.hpp>

#include "store/inspect_view.h"

using namespace manifold;
using namespace manifold::store;

namespace {

ContainerRecord sample() {
  ContainerRecord r;
  r.container_id = "0123456789abcdef0123456789abcdef";
  r.network = "k8s-pod-network";
  r.netns = "/var/run/netns/pod1";
  r.ifname = "eth0";
  r.cni_version = "1.0.0";
  AttachmentRecord eth0;
  eth0.name = "cbr0";
  eth0.ifname = "eth0";
  eth0.cluster_network = true;
  eth0.config = R"({"cniVersion":"1.0.0","name":"cbr0","type":"bridge","token":"s3cr3t-t0ken"})";
  eth0.result = R"({"cniVersion":"1.0.0","interfaces":[{"name":"cni0","mac":"aa:aa:aa:aa:aa:aa"},
      {"name":"eth0","mac":"0a:58:0a:f4:01:05","sandbox":"/var/run/netns/pod1"}],
      "ips":[{"address":"10.244.1.5/24","gateway":"10.244.1.1","interface":1}],
      "routes":[{"dst":"0.0.0.0/0","gw":"10.244.1.1"}]})";
  AttachmentRecord net1;
  net1.name = "default/data";
  net1.ifname = "net1";
  net1.config = R"({"cniVersion":"0.3.1","name":"data","type":"macvlan"})";
  net1.result = R"({"cniVersion":"0.2.0","ip4":{"ip":"192.168.10.5/24","gateway":"192.168.10.1"}})";
  net1.extra = Json{{"sourceRouting", {{"table", 1000}, {"rulePriority", 30000}}}};
  r.attachments = {eth0, net1};
  return r;
}

}  // namespace

TEST_CASE("the list table shows every entry", "[store]") {
  std::vector<ContainerEntry> entries;
  entries.push_back({sample().key(), sample(), "", true});
  entries.push_back({{"badc0ffee", "other", "eth1"}, std::nullopt, "corrupt cache file", false});
  std::string t = list_table(entries, "/var/lib/cni/manifold");
  CHECK(t ==
        "CONTAINER     NETWORK          IFNAME  NETNS                STATE                           INTERFACES  "
        "ATTACHMENTS\n"
        "0123456789ab  k8s-pod-network  eth0    /var/run/netns/pod1  netns present                   eth0,net1   "
        "cbr0,default/data\n"
        "badc0ffee     other            eth1    -                    unreadable: corrupt cache file  -           -\n");
  CHECK(list_table({}, "/x") == "no containers in /x\n");
  Json j = list_json(entries);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["containerId"] == sample().container_id);
  CHECK(j[0]["attachments"][0]["ips"] == Json::array({"10.244.1.5/24"}));
  CHECK(j[0]["attachments"][1]["ips"] == Json::array({"192.168.10.5/24"}));
  CHECK(j[0]["network"] == "k8s-pod-network");
  CHECK(j[0]["ifname"] == "eth0");
  CHECK(j[1] ==
        Json{{"containerId", "badc0ffee"}, {"network", "other"}, {"ifname", "eth1"}, {"error", "corrupt cache file"}});
}

TEST_CASE("one container's view decodes results and shows scoping state", "[store]") {
  std::string t = container_text(sample(), false);
  CHECK(t.find("netns:      /var/run/netns/pod1 (gone)\n") != std::string::npos);
  CHECK(t.find("IFNAME  NETWORK       CLUSTER  IPS              MAC                GATEWAYS    SCOPING\n"
               "eth0    cbr0          yes      10.244.1.5/24    0a:58:0a:f4:01:05  10.244.1.1  -\n"
               "net1    default/data  no       192.168.10.5/24  -                  -           sourceRouting\n") !=
        std::string::npos);
  CHECK(t.find("scoping state of net1:\n{\n  \"sourceRouting\": {\n    \"table\": 1000,") != std::string::npos);
  CHECK(t.find("s3cr3t") == std::string::npos);

  Json j = container_json(sample(), true);
  CHECK(j["netnsExists"] == true);
  CHECK(j["attachments"][0]["mac"] == "0a:58:0a:f4:01:05");
  CHECK(j["attachments"][0]["gateways"] == Json::array({"10.244.1.1"}));
  CHECK(j["attachments"][1]["gateways"] == Json::array());  // a gateway without a default route is not one
  CHECK(j["attachments"][0]["config"]["token"] == "<redacted>");
  CHECK(j["attachments"][1]["scoping"]["sourceRouting"]["table"] == 1000);
  CHECK(j["attachments"][1]["result"]["ip4"]["ip"] == "192.168.10.5/24");
  CHECK(j.dump().find("s3cr3t") == std::string::npos);
}

TEST_CASE("missing or corrupt results and configs are shown, not fatal", "[store]") {
  ContainerRecord r = sample();
  r.attachments[0].result = "";
  r.attachments[1].result = "{not json";
  r.attachments[1].config = "garbage";
  std::string t = container_text(r, true);
  CHECK(t.find("(no result)") != std::string::npos);
  CHECK(t.find("(unreadable result)") != std::string::npos);
  r.attachments[0].delegate_started = false;  // recorded by an ADD killed before it ran
  CHECK(container_text(r, true).find("(never started)") != std::string::npos);
  CHECK(container_json(r, true)["attachments"][0]["scoping"]["delegateStarted"] == false);
  Json j = container_json(r, true);
  CHECK(j["attachments"][1]["config"] == "<not JSON>");
  CHECK(j["attachments"][1]["result"].is_null());
}

TEST_CASE("tables align columns and trim trailing spaces", "[store]") {
  CHECK(render_table({{"A", "BB", ""}, {"CCC", "D", "E"}}) == "A    BB\nCCC  D   E\n");
}
