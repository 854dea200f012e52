// Tests of network-status rendering: byte-for-byte against both of Multus's documented examples,
// the one- and multi-interface rules, gateway/device-info/extra fields, and Go-identical JSON
// output (escaping, numbers, empty containers, IP formatting).
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "k8s/go_json.h"
#include "k8s/network_status.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::k8s;

namespace {

StatusInput attachment(std::string name, bool is_default) {
  StatusInput in;
  in.name = std::move(name);
  in.is_default = is_default;
  return in;
}

StatusIp ip(std::string address, std::optional<int> iface = std::nullopt, std::string gateway = {}) {
  return StatusIp{std::move(address), iface, std::move(gateway)};
}

}  // namespace

TEST_CASE("network-status: derived exact serialization of the reference (master with sandbox + NAD)", "[k8s]") {
  StatusInput master = attachment("cbr0", true);
  master.interfaces = {{"eth0", "92:79:27:01:7c:ce", 1500, "/var/run/netns/pod"}};
  master.ips = {ip("10.244.1.2/24", 0)};
  StatusInput nad = attachment("default/test-net-attach-def-1", false);
  nad.interfaces = {{"net1", "ea:0e:fa:63:95:f9", 0, "/var/run/netns/pod"}};
  nad.ips = {ip("1.1.1.1/24", 0)};

  const std::string expected = R"([{
    "name": "cbr0",
    "interface": "eth0",
    "ips": [
        "10.244.1.2"
    ],
    "mac": "92:79:27:01:7c:ce",
    "mtu": 1500,
    "default": true,
    "dns": {}
},{
    "name": "default/test-net-attach-def-1",
    "interface": "net1",
    "ips": [
        "1.1.1.1"
    ],
    "mac": "ea:0e:fa:63:95:f9",
    "dns": {}
}])";
  CHECK(render_network_status({master, nad}) == expected);
}

TEST_CASE("network-status: quickstart example (flannel result without sandbox)", "[k8s]") {
  StatusInput flannel = attachment("cbr0", true);
  flannel.interfaces = {{"cni0", "aa:bb:cc:dd:ee:ff", 1450, ""}};
  flannel.ips = {ip("10.244.1.73/24")};
  StatusInput macvlan = attachment("default/macvlan-conf", false);
  macvlan.interfaces = {{"net1", "86:1d:96:ff:55:0d", 0, "/proc/1234/ns/net"}};
  macvlan.ips = {ip("192.168.1.205/24", 0)};

  const std::string expected = R"([{
    "name": "cbr0",
    "ips": [
        "10.244.1.73"
    ],
    "default": true,
    "dns": {}
},{
    "name": "default/macvlan-conf",
    "interface": "net1",
    "ips": [
        "192.168.1.205"
    ],
    "mac": "86:1d:96:ff:55:0d",
    "dns": {}
}])";
  CHECK(render_network_status({flannel, macvlan}) == expected);
}

TEST_CASE("network-status: gateway lists installed gateways, after dns and device-info", "[k8s]") {
  StatusInput in = attachment("default/net-a", false);
  in.interfaces = {{"net1", "0a:58:0a:01:01:05", 9000, "/ns"}};
  in.ips = {ip("10.1.1.5/24", 0, "10.1.1.1"), ip("2001:0db8:0:0::5/64", 0, "2001:db8::1")};
  in.gateways = {"10.1.1.1", "2001:db8:0:0::1"};
  in.dns.nameservers = {"10.96.0.10"};
  in.dns.domain = "cluster.local";
  in.dns.search = {"ns.svc.cluster.local", "svc.cluster.local"};
  in.dns.options = {"ndots:5"};
  in.device_info = Json::parse(R"({"type":"pci","version":"1.0.0","pci":{"pci-address":"0000:03:00.1"}})");

  const std::string expected = R"([{
    "name": "default/net-a",
    "interface": "net1",
    "ips": [
        "10.1.1.5",
        "2001:db8::5"
    ],
    "mac": "0a:58:0a:01:01:05",
    "mtu": 9000,
    "dns": {
        "nameservers": [
            "10.96.0.10"
        ],
        "domain": "cluster.local",
        "search": [
            "ns.svc.cluster.local",
            "svc.cluster.local"
        ],
        "options": [
            "ndots:5"
        ]
    },
    "device-info": {
        "type": "pci",
        "version": "1.0.0",
        "pci": {
            "pci-address": "0000:03:00.1"
        }
    },
    "gateway": [
        "10.1.1.1",
        "2001:db8::1"
    ]
}])";
  CHECK(render_network_status({in}) == expected);

  in.gateways.clear();  // nothing installed: no key at all (Multus would write the plugin's or "<nil>")
  CHECK(render_network_status({in}).find("gateway") == std::string::npos);
}

TEST_CASE("network-status: several interfaces in one result", "[k8s]") {
  StatusInput in = attachment("kube-system/multi", true);
  in.interfaces = {{"veth1234", "11:11:11:11:11:11", 1500, ""},
                   {"eth0", "22:22:22:22:22:22", 1500, "/ns"},
                   {"eth1", "33:33:33:33:33:33", 0, "/ns"}};
  in.ips = {ip("192.0.2.1/24", 0),             // host-side interface: dropped
            ip("10.0.0.2/24", 1),              // eth0
            ip("10.0.1.2/24", 2, "10.0.1.1"),  // eth1, first IP with gateway and index -> default
            ip("10.0.2.2/24"),                 // no index -> last sandbox entry
            ip("10.0.3.2/24", 7)};             // unknown index: dropped
  in.gateways = {"10.0.1.1"};

  const std::string expected = R"([{
    "name": "kube-system/multi",
    "interface": "eth0",
    "ips": [
        "10.0.0.2"
    ],
    "mac": "22:22:22:22:22:22",
    "mtu": 1500,
    "dns": {},
    "gateway": [
        "10.0.1.1"
    ]
},{
    "name": "kube-system/multi",
    "interface": "eth1",
    "ips": [
        "10.0.1.2",
        "10.0.2.2"
    ],
    "mac": "33:33:33:33:33:33",
    "default": true,
    "dns": {},
    "gateway": [
        "10.0.1.1"
    ]
}])";
  CHECK(render_network_status({in}) == expected);
}

TEST_CASE("network-status: multi-interface default falls back to the first sandbox interface", "[k8s]") {
  StatusInput in = attachment("cluster", true);
  in.interfaces = {{"br", "", 0, ""}, {"eth0", "", 0, "/ns"}, {"eth1", "", 0, "/ns"}};
  in.ips = {ip("10.0.0.2/24", 1, "")};
  std::string out = render_network_status({in});
  CHECK(out == R"([{
    "name": "cluster",
    "interface": "eth0",
    "ips": [
        "10.0.0.2"
    ],
    "default": true,
    "dns": {}
},{
    "name": "cluster",
    "interface": "eth1",
    "dns": {}
}])");

  // A gateway IP pointing at a host-side interface means no entry is marked (as in Multus).
  in.ips = {ip("10.0.0.2/24", 0, "10.0.0.1")};
  CHECK(render_network_status({in}).find("\"default\"") == std::string::npos);

  // Not the cluster default network: never marked.
  in.is_default = false;
  in.ips = {ip("10.0.0.2/24", 1, "10.0.0.1")};
  CHECK(render_network_status({in}).find("\"default\"") == std::string::npos);
}

TEST_CASE("network-status: results without interfaces produce no entry", "[k8s]") {
  StatusInput ipam_only = attachment("legacy", true);
  ipam_only.ips = {ip("10.0.0.2/24")};
  CHECK(render_network_status({ipam_only}) == "[]");
  CHECK(render_network_status({}) == "[]");

  StatusInput only_host = attachment("hostside", false);
  only_host.interfaces = {{"veth0", "", 0, ""}, {"veth1", "", 0, ""}};
  CHECK(render_network_status({only_host}) == "[]");
}

TEST_CASE("network-status: single interface takes every IP regardless of index", "[k8s]") {
  StatusInput in = attachment("net", false);
  in.interfaces = {{"net1", "", 0, "/ns"}};
  in.ips = {ip("10.0.0.2/24", 0), ip("10.0.0.3/24", 5), ip("10.0.0.4/24")};
  CHECK(render_network_status({in}) == R"([{
    "name": "net",
    "interface": "net1",
    "ips": [
        "10.0.0.2",
        "10.0.0.3",
        "10.0.0.4"
    ],
    "dns": {}
}])");
}

TEST_CASE("network-status: device-info written as given, after dns; none when null", "[k8s]") {
  StatusInput in = attachment("sriov", false);
  in.interfaces = {{"net1", "", 0, "/ns"}};
  in.device_info = Json::parse(R"({"type":"vdpa","vdpa":{"driver":"vhost","path":"/dev/vhost-vdpa-0"}})");
  CHECK(render_network_status({in}) == R"([{
    "name": "sriov",
    "interface": "net1",
    "dns": {},
    "device-info": {
        "type": "vdpa",
        "vdpa": {
            "driver": "vhost",
            "path": "/dev/vhost-vdpa-0"
        }
    }
}])");

  in.device_info = Json::object();
  CHECK(render_network_status({in}).find("\"device-info\": {}") != std::string::npos);
  in.device_info = nullptr;
  CHECK(render_network_status({in}).find("device-info") == std::string::npos);
}

TEST_CASE("network-status: extra fields after gateway", "[k8s]") {
  StatusInput in = attachment("mesh-net", false);
  in.interfaces = {{"net1", "", 0, "/ns"}};
  in.gateways = {"10.0.0.1"};
  in.extra_fields = Json::parse(R"({"mesh":true,"name":"clobber","x-ports":[15001,15006]})");
  CHECK(render_network_status({in}) == R"([{
    "name": "mesh-net",
    "interface": "net1",
    "dns": {},
    "gateway": [
        "10.0.0.1"
    ],
    "mesh": true,
    "x-ports": [
        15001,
        15006
    ]
}])");
  in.extra_fields = "not an object";
  CHECK_THROWS_AS(render_network_status({in}), CniError);
}

TEST_CASE("network-status: strings are escaped as Go escapes them", "[k8s]") {
  StatusInput in = attachment(std::string("<a&b>\"\\\n\t\x01\b\f\x7f") + "\xff" + "\xe2\x80\xa8\xe2\x80\xa9" +
                                  "\xc3\xa9" + "\xed\xa0\x80" + "\xe2\x82",
                              false);
  in.interfaces = {{"net1", "", 0, "/ns"}};
  std::string out = render_network_status({in});
  CHECK(out.find(R"("name": "\u003ca\u0026b\u003e\"\\\n\t\u0001\b\f)"
                 "\x7f"
                 R"(\ufffd\u2028\u2029)"
                 "\xc3\xa9"
                 R"(\ufffd\ufffd\ufffd\ufffd\ufffd")") != std::string::npos);
}

TEST_CASE("go_marshal_indent matches Go's MarshalIndent", "[k8s]") {
  CHECK(go_marshal_indent(Json::object()) == "{}");
  CHECK(go_marshal_indent(Json::array()) == "[]");
  CHECK(go_marshal_indent(Json::parse(R"({"a":[],"b":{},"c":[{}],"d":null})")) ==
        "{\n    \"a\": [],\n    \"b\": {},\n    \"c\": [\n        {}\n    ],\n    \"d\": null\n}");
  CHECK(go_marshal_indent(Json(-42)) == "-42");
  CHECK(go_marshal_indent(Json(18446744073709551615ULL)) == "18446744073709551615");
  CHECK(go_marshal_indent(Json(1.5)) == "1.5");
  CHECK(go_marshal_indent(Json(100.0)) == "100");
  CHECK(go_marshal_indent(Json(0.000001)) == "0.000001");
  CHECK(go_marshal_indent(Json(1e-7)) == "1e-7");
  CHECK(go_marshal_indent(Json(1e21)) == "1e+21");
  CHECK(go_marshal_indent(Json(1e20)) == "100000000000000000000");
  CHECK(go_marshal_indent(Json(-2.5e-10)) == "-2.5e-10");
  CHECK(go_marshal_indent(Json(0.0)) == "0");
  CHECK(go_marshal_indent(Json(false)) == "false");
}

TEST_CASE("go_ip_string formats like Go's net.IP.String", "[k8s]") {
  CHECK(go_ip_string("10.1.1.2/24") == "10.1.1.2");
  CHECK(go_ip_string("10.1.1.2") == "10.1.1.2");
  CHECK(go_ip_string("2001:0DB8:0:0:0:0:0:1/64") == "2001:db8::1");
  CHECK(go_ip_string("::ffff:10.1.1.1/120") == "10.1.1.1");
  CHECK(go_ip_string("2001:db8:0:1:0:0:0:1") == "2001:db8:0:1::1");
  CHECK(go_ip_string("2001:db8:0:0:1:0:0:1") == "2001:db8::1:0:0:1");
  CHECK(go_ip_string("2001:db8:1:1:1:1:0:1") == "2001:db8:1:1:1:1:0:1");
  CHECK(go_ip_string("::") == "::");
  CHECK(go_ip_string("::1") == "::1");
  CHECK(go_ip_string("fe80::") == "fe80::");
  CHECK(go_ip_string("::1.2.3.4") == "::102:304");
  CHECK(go_ip_string("not-an-ip/24") == "not-an-ip");
}
