// Tests of the network selection annotation parser: both forms, every selection-element field,
// every malformed form listed in the Multus reference (with its messages), manifold's stricter
// checks and bounds, the default-network annotation, and what an element delivers to its delegate.
#include <catch2/catch.hpp>

#include <string>

#include "cni/error.h"
#include "k8s/selection.h"
#include "k8s/selection_syntax.h"
#include "util/utf8.h"

using manifold::Json;
using manifold::cni::CniError;
using namespace manifold::k8s;

namespace {

/// Runs the parser expecting a CniError(InvalidConfig) and returns its message.
std::string parse_error(const std::string& value, const std::string& ns = "podns") {
  try {
    parse_networks_annotation(value, ns);
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  FAIL("expected a CniError for: " << value.substr(0, 200));
  return {};
}

std::string default_network_error(const std::string& value) {
  try {
    parse_default_network_annotation(value, "kube-system");
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    return e.msg();
  }
  FAIL("expected a CniError for: " << value);
  return {};
}

const std::string kMismatch =
    "parsePodNetworkAnnotation: parsePodNetworkObjectName: Failed to parse: one or more items did not match "
    "comma-delimited format (must consist of lower case alphanumeric characters). Must start and end with an "
    "alphanumeric character), mismatch @ '";

}  // namespace

TEST_CASE("comma form: bare name, namespace and interface", "[k8s]") {
  auto nets = parse_networks_annotation("macvlan-conf", "podns");
  REQUIRE(nets.size() == 1);
  CHECK(nets[0].name == "macvlan-conf");
  CHECK(nets[0].namespace_ == "podns");
  CHECK(nets[0].interface.empty());
  CHECK_FALSE(nets[0].has_default_route);
  CHECK(nets[0].cni_args.is_null());
  CHECK_FALSE(nets[0].bandwidth.has_value());

  nets = parse_networks_annotation("other/net-a@eth7,net-b@net2,net-a", "podns");
  REQUIRE(nets.size() == 3);
  CHECK(nets[0].namespace_ == "other");
  CHECK(nets[0].name == "net-a");
  CHECK(nets[0].interface == "eth7");
  CHECK(nets[1].namespace_ == "podns");
  CHECK(nets[1].name == "net-b");
  CHECK(nets[1].interface == "net2");
  CHECK(nets[2].name == "net-a");
  CHECK(nets[2].interface.empty());
}

TEST_CASE("comma form: whitespace around every part is trimmed", "[k8s]") {
  auto nets = parse_networks_annotation("  ns1 / net1 @ eth1 ,\tnet2 \n", "podns");
  REQUIRE(nets.size() == 2);
  CHECK(nets[0].namespace_ == "ns1");
  CHECK(nets[0].name == "net1");
  CHECK(nets[0].interface == "eth1");
  CHECK(nets[1].namespace_ == "podns");
  CHECK(nets[1].name == "net2");
}

TEST_CASE("comma form: empty namespace part and empty interface part", "[k8s]") {
  auto nets = parse_networks_annotation("/net1,net2@", "podns");
  REQUIRE(nets.size() == 2);
  CHECK(nets[0].namespace_ == "podns");
  CHECK(nets[0].name == "net1");
  CHECK(nets[1].interface.empty());
}

TEST_CASE("empty or blank annotation gives no networks", "[k8s]") {
  CHECK(parse_networks_annotation("", "podns").empty());
  CHECK(parse_networks_annotation(" \t\n ", "podns").empty());
}

TEST_CASE("comma form: Multus's malformed forms and messages", "[k8s]") {
  CHECK(parse_error("a/b/c") ==
        "parsePodNetworkAnnotation: parsePodNetworkObjectName: Invalid network object (failed at '/')");
  CHECK(parse_error("net@if1@if2") ==
        "parsePodNetworkAnnotation: parsePodNetworkObjectName: Invalid network object (failed at '@')");
  CHECK(parse_error("Macvlan") == kMismatch + "Macvlan'");
  CHECK(parse_error("net_1") == kMismatch + "net_1'");
  CHECK(parse_error("-net") == kMismatch + "-net'");
  CHECK(parse_error("net-") == kMismatch + "net-'");
  CHECK(parse_error("Bad.NS/net1") == kMismatch + "Bad.NS'");
  CHECK(parse_error("good,my net") == kMismatch + "my net'");
  CHECK(parse_error("net1@abcdefghijklmnop") ==
        "parsePodNetworkAnnotation: parsePodNetworkObjectName: Failed to parse interface name: must be less than "
        "15 chars and not contain '/' or spaces. interface name 'abcdefghijklmnop'");
  CHECK(parse_error("net1@et h0") ==
        "parsePodNetworkAnnotation: parsePodNetworkObjectName: Failed to parse interface name: must be less than "
        "15 chars and not contain '/' or spaces. interface name 'et h0'");
  // 15 characters is the maximum that fits IFNAMSIZ.
  CHECK(parse_networks_annotation("net1@abcdefghijklmno", "podns")[0].interface == "abcdefghijklmno");
}

TEST_CASE("comma form: empty items are rejected (Multus fails later, at NAD lookup)", "[k8s]") {
  CHECK(parse_error("a,,b") == "parsePodNetworkAnnotation: item 2 has an empty network name");
  CHECK(parse_error("a,") == "parsePodNetworkAnnotation: item 2 has an empty network name");
  CHECK(parse_error(",a") == "parsePodNetworkAnnotation: item 1 has an empty network name");
  CHECK(parse_error("ns1/") == "parsePodNetworkAnnotation: item 1 has an empty network name");
  CHECK(parse_error("@eth1") == "parsePodNetworkAnnotation: item 1 has an empty network name");
}

TEST_CASE("comma form: manifold's stricter interface-name and namespace checks", "[k8s]") {
  CHECK(parse_error("net1@eth:0") ==
        "parsePodNetworkAnnotation: invalid interface name 'eth:0' for network podns/net1: must be 1-15 "
        "characters of [A-Za-z0-9_.-]");
  CHECK(parse_error("net1@..").find("invalid interface name '..'") != std::string::npos);
  CHECK(parse_error("net1@eth$(x)").find("invalid interface name") != std::string::npos);
  std::string long_ns(64, 'a');
  CHECK(parse_error(long_ns + "/net1").find("invalid namespace '") != std::string::npos);
  CHECK(parse_networks_annotation(std::string(63, 'a') + "/net1", "podns")[0].namespace_ == std::string(63, 'a'));
  // A pod namespace that is not a DNS label is not used to build NAD references.
  CHECK(parse_error("net1", "Bad_NS").find("invalid namespace 'Bad_NS'") != std::string::npos);
  CHECK(parse_error("net1", "").find("has no namespace") != std::string::npos);
}

TEST_CASE("JSON form: every selection-element field", "[k8s]") {
  const std::string value = R"([{
    "name": "sriov-net",
    "namespace": "ns1",
    "interface": "net5",
    "ips": ["10.1.1.5/24", "2001:db8::5/64", "10.2.2.2"],
    "mac": "0a:58:0a:01:01:05",
    "default-route": ["10.1.1.1", "2001:db8::1"],
    "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": "192.0.2.1"},
                     {"hostPort": 53, "containerPort": 5353}],
    "bandwidth": {"ingressRate": 1000, "ingressBurst": 2000, "egressRate": 3000, "egressBurst": 4000},
    "cni-args": {"vlan": 100, "nested": {"a": [1, 2]}},
    "infiniband-guid": "c2:11:22:33:44:55:66:77",
    "ipam-claim-reference": "my-claim",
    "deviceID": "0000:03:00.1",
    "someUnknownKey": {"ignored": true}
  }])";
  auto nets = parse_networks_annotation(value, "podns");
  REQUIRE(nets.size() == 1);
  const SelectionElement& e = nets[0];
  CHECK(e.name == "sriov-net");
  CHECK(e.namespace_ == "ns1");
  CHECK(e.interface == "net5");
  CHECK(e.ips == std::vector<std::string>{"10.1.1.5/24", "2001:db8::5/64", "10.2.2.2"});
  CHECK(e.mac == "0a:58:0a:01:01:05");
  CHECK(e.has_default_route);
  CHECK(e.default_route == std::vector<std::string>{"10.1.1.1", "2001:db8::1"});
  REQUIRE(e.port_mappings.size() == 2);
  CHECK(e.port_mappings[0].host_port == 8080);
  CHECK(e.port_mappings[0].container_port == 80);
  CHECK(e.port_mappings[0].protocol == "tcp");
  CHECK(e.port_mappings[0].host_ip == "192.0.2.1");
  CHECK(e.port_mappings[1].host_port == 53);
  CHECK(e.port_mappings[1].protocol.empty());
  REQUIRE(e.bandwidth.has_value());
  CHECK(*e.bandwidth->ingress_rate == 1000);
  CHECK(*e.bandwidth->ingress_burst == 2000);
  CHECK(*e.bandwidth->egress_rate == 3000);
  CHECK(*e.bandwidth->egress_burst == 4000);
  CHECK(e.cni_args == Json::parse(R"({"vlan": 100, "nested": {"a": [1, 2]}})"));
  CHECK(e.infiniband_guid == "c2:11:22:33:44:55:66:77");
  CHECK(e.ipam_claim_reference == "my-claim");
  CHECK(e.device_id == "0000:03:00.1");
}

TEST_CASE("JSON form: defaults, list order, nulls as absent", "[k8s]") {
  auto nets = parse_networks_annotation(
      R"([{"name":"a"},{"name":"b","namespace":"","ips":null,"cni-args":null,"default-route":null,"bandwidth":null}])",
      "podns");
  REQUIRE(nets.size() == 2);
  CHECK(nets[0].name == "a");
  CHECK(nets[0].namespace_ == "podns");
  CHECK(nets[1].name == "b");
  CHECK(nets[1].namespace_ == "podns");
  CHECK(nets[1].ips.empty());
  CHECK(nets[1].cni_args.is_null());
  CHECK_FALSE(nets[1].has_default_route);
  CHECK_FALSE(nets[1].bandwidth.has_value());
  CHECK(parse_networks_annotation("[]", "podns").empty());
}

TEST_CASE("JSON form: an empty default-route list still counts as present", "[k8s]") {
  auto nets = parse_networks_annotation(R"([{"name":"a","default-route":[]}])", "podns");
  CHECK(nets[0].has_default_route);
  CHECK(nets[0].default_route.empty());
}

TEST_CASE("JSON form: the same network twice gives two elements", "[k8s]") {
  auto nets = parse_networks_annotation(R"([{"name":"a"},{"name":"a"}])", "podns");
  REQUIRE(nets.size() == 2);
  CHECK(nets[0].name == nets[1].name);
}

TEST_CASE("JSON form: deprecated interfaceRequest is an alias of interface", "[k8s]") {
  auto nets = parse_networks_annotation(
      R"([{"name":"a","interfaceRequest":"old0"},{"name":"b","interface":"new0","interfaceRequest":"old1"}])", "podns");
  CHECK(nets[0].interface == "old0");
  CHECK(nets[1].interface == "new0");
}

TEST_CASE("JSON form: keys match case-insensitively like Go's decoder, last one wins", "[k8s]") {
  auto nets = parse_networks_annotation(R"([{"NAME":"x","Namespace":"ns2","Interface":"e1","name":"y"}])", "podns");
  CHECK(nets[0].name == "y");
  CHECK(nets[0].namespace_ == "ns2");
  CHECK(nets[0].interface == "e1");
}

TEST_CASE("JSON form: format chosen by the presence of a bracket, a brace or a quote", "[k8s]") {
  CHECK(parse_error(R"({"name":"a"})").find("expected a JSON list of network selection elements, not a JSON object") !=
        std::string::npos);
  CHECK(parse_error(R"("a")").find("not a JSON string") != std::string::npos);
  std::string broken = parse_error("[{\"name\":\"a\"}");
  // Where the text broke and what was expected, in a reader's terms (it reaches an event on the pod).
  CHECK(broken ==
        "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection Annotation JSON format: not valid "
        "JSON at line 1, column 14: unexpected end of input; expected ']'");
  CHECK(parse_error("a,[b").find("JSON format") != std::string::npos);
  CHECK(parse_error("a,b]") == kMismatch + "b]'");
}

TEST_CASE("JSON form: Multus's MAC, GUID, IP and CIDR checks and messages", "[k8s]") {
  CHECK(parse_error(R"([{"name":"a","mac":"zz:zz:zz:zz:zz:zz"}])") ==
        "parsePodNetworkAnnotation: failed to mac: address zz:zz:zz:zz:zz:zz: invalid MAC address");
  CHECK(parse_error(R"([{"name":"a","mac":"0a:58:0a:01:01"}])") ==
        "parsePodNetworkAnnotation: failed to mac: address 0a:58:0a:01:01: invalid MAC address");
  CHECK(parse_error(R"([{"name":"a","infiniband-guid":"12:34"}])") ==
        "parsePodNetworkAnnotation: failed to validate infiniband GUID: address 12:34: invalid MAC address");
  CHECK(parse_error(R"([{"name":"a","ips":["10.1.1"]}])") == "failed to parse IP address \"10.1.1\"");
  CHECK(parse_error(R"([{"name":"a","ips":["10.1.1.1/33"]}])") ==
        "failed to parse CIDR \"10.1.1.1/33\": invalid CIDR address: 10.1.1.1/33");
  CHECK(parse_error(R"([{"name":"a","ips":["2001:db8::1/129"]}])") ==
        "failed to parse CIDR \"2001:db8::1/129\": invalid CIDR address: 2001:db8::1/129");
  CHECK(parse_error(R"([{"name":"a","ips":["fe80::1%eth0"]}])") == "failed to parse IP address \"fe80::1%eth0\"");
  CHECK(parse_error(R"([{"name":"a","ips":["01.2.3.4"]}])") == "failed to parse IP address \"01.2.3.4\"");
}

TEST_CASE("JSON form: a bad default-route fails the whole decode", "[k8s]") {
  CHECK(parse_error(R"([{"name":"a","default-route":["10.1.1"]}])") ==
        "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection Annotation JSON format: "
        "invalid IP address: 10.1.1");
  CHECK(parse_error(R"([{"name":"a","default-route":[""]}])").find("invalid IP address") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","default-route":[7]}])").find("\"default-route\" must be a list") !=
        std::string::npos);
  CHECK(parse_error(R"([{"name":"a","default-route":"10.1.1.1"}])").find("\"default-route\" must be a list") !=
        std::string::npos);
}

TEST_CASE("JSON form: wrong types are rejected", "[k8s]") {
  CHECK(parse_error(R"([{"name":5}])").find("element 1: \"name\" must be a string, not number") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","ips":"10.1.1.1"}])").find("\"ips\" must be a list of strings") !=
        std::string::npos);
  CHECK(parse_error(R"([{"name":"a","ips":[1]}])").find("\"ips\" must be a list of strings") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","cni-args":[1]}])").find("\"cni-args\" must be an object, not array") !=
        std::string::npos);
  CHECK(parse_error(R"([{"name":"a"}, 3])").find("element 2 must be an object, not number") != std::string::npos);
  CHECK(parse_error(R"([null])").find("element 1 must be an object, not null") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":{}}])").find("\"portMappings\" must be a list") !=
        std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[null]}])").find("entries must be objects") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[{"hostPort":"80","containerPort":80}]}])")
            .find("\"portMappings.hostPort\" must be an integer") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[{"hostPort":80.5,"containerPort":80}]}])")
            .find("must be an integer, not a fraction") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[{"hostPort":70000,"containerPort":80}]}])")
            .find("\"portMappings.hostPort\" must be a port number between 1 and 65535") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[{"hostPort":80}]}])")
            .find("\"portMappings.containerPort\" must be a port number") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[{"hostPort":80,"containerPort":80,"protocol":"icmp"}]}])")
            .find("must be tcp, udp or sctp") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","portMappings":[{"hostPort":80,"containerPort":80,"hostIP":"x"}]}])")
            .find("\"portMappings.hostIP\" is not an IP address") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","bandwidth":[]}])").find("\"bandwidth\" must be an object") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","bandwidth":{"ingressRate":-1}}])").find("must not be negative") !=
        std::string::npos);
  CHECK(parse_error(R"([{"name":"a","bandwidth":{"egressBurst":18446744073709551615}}])").find("out of range") !=
        std::string::npos);
  CHECK(parse_error(R"([{"name":"a","mac":5}])").find("\"mac\" must be a string") != std::string::npos);
}

TEST_CASE("JSON form: manifold's name, namespace and interface checks", "[k8s]") {
  CHECK(parse_error(R"([{"namespace":"ns1"}])") == "parsePodNetworkAnnotation: element 1 has an empty network name");
  CHECK(parse_error(R"([{"name":"../../pods/x"}])").find("invalid network name '../../pods/x'") != std::string::npos);
  CHECK(parse_error(R"([{"name":"Net1"}])").find("invalid network name 'Net1'") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","namespace":"ns/x"}])").find("invalid namespace 'ns/x'") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","interface":"abcdefghijklmnop"}])")
            .find("invalid interface name 'abcdefghijklmnop' for network podns/a") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","interface":"eth 0"}])").find("invalid interface name") != std::string::npos);
  CHECK(parse_error(R"([{"name":"a","interfaceRequest":"x/y"}])").find("invalid interface name 'x/y'") !=
        std::string::npos);
  // Dotted names are valid Kubernetes object names in the JSON form.
  CHECK(parse_networks_annotation(R"([{"name":"my.net-1"}])", "podns")[0].name == "my.net-1");
}

TEST_CASE("oversized annotations are rejected with a clear message", "[k8s]") {
  std::string huge(2 * 1024 * 1024, 'a');
  CHECK(parse_error(huge) ==
        "parsePodNetworkAnnotation: the k8s.v1.cni.cncf.io/networks annotation is too large (2097152 bytes, at "
        "most 262144 allowed)");

  std::string many;
  for (int i = 0; i < 10000; ++i) many += (i ? ",n" : "n") + std::to_string(i);
  CHECK(parse_error(many) == "parsePodNetworkAnnotation: too many networks (10000 items, at most 1000 allowed)");

  std::string json_many = "[";
  for (int i = 0; i < 1001; ++i) json_many += (i ? ",{\"name\":\"a\"}" : "{\"name\":\"a\"}");
  json_many += "]";
  CHECK(parse_error(json_many) == "parsePodNetworkAnnotation: too many networks (1001 elements, at most 1000 allowed)");

  std::string comma_1000;
  for (int i = 0; i < 1000; ++i) comma_1000 += (i ? ",n" : "n") + std::to_string(i);
  CHECK(parse_networks_annotation(comma_1000, "podns").size() == 1000);

  std::string deep = std::string(200, '[') + std::string(200, ']');
  CHECK(parse_error(deep).find("nested deeper than 32 levels") != std::string::npos);
  std::string deep_args = R"([{"name":"a","cni-args":)" + std::string(40, '[') + std::string(40, ']') + "}]";
  CHECK(parse_error(deep_args).find("nested deeper") != std::string::npos);
}

TEST_CASE("long untrusted values are shortened in messages", "[k8s]") {
  std::string bad(5000, 'X');
  std::string msg = parse_error(bad);
  CHECK(msg.size() < 400);
  CHECK(msg.find("XXX...'") != std::string::npos);
}

TEST_CASE("default-network annotation", "[k8s]") {
  SelectionElement e = parse_default_network_annotation("calico-alt", "kube-system");
  CHECK(e.name == "calico-alt");
  CHECK(e.namespace_ == "kube-system");

  e = parse_default_network_annotation(R"([{"name":"alt","namespace":"netns","interface":"eth9"}])", "kube-system");
  CHECK(e.namespace_ == "netns");
  CHECK(e.interface == "eth9");

  CHECK(default_network_error("a,b") == "tryLoadK8sPodDefaultNetwork: more than one default network is specified: a,b");
  CHECK(default_network_error("") ==
        "tryLoadK8sPodDefaultNetwork: no default network is specified in the v1.multus-cni.io/default-network "
        "annotation");
  CHECK(default_network_error("[]").find("no default network is specified") != std::string::npos);
  CHECK(default_network_error("a/b/c") ==
        "tryLoadK8sPodDefaultNetwork: failed to parse CRD object: parsePodNetworkAnnotation: "
        "parsePodNetworkObjectName: Invalid network object (failed at '/')");
  CHECK(default_network_error(std::string(300000, 'a'))
            .find("v1.multus-cni.io/default-network annotation is too large") != std::string::npos);
}

TEST_CASE("runtimeConfig delivered for an element", "[k8s]") {
  auto e = parse_networks_annotation(R"([{
    "name": "a", "ips": ["10.1.1.5/24"], "mac": "0a:58:0a:01:01:05", "infiniband-guid": "c2:11:22:33:44:55:66:77",
    "deviceID": "0000:03:00.1",
    "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": "192.0.2.1"},
                     {"hostPort": 53, "containerPort": 5353}],
    "bandwidth": {"ingressRate": 1000, "egressBurst": 4000},
    "cni-args": {"not": "runtime config"}, "default-route": ["10.1.1.1"]}])",
                                     "podns")[0];
  Json expected = Json::parse(R"({
    "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": "192.0.2.1"},
                     {"hostPort": 53, "containerPort": 5353}],
    "bandwidth": {"ingressRate": 1000, "egressBurst": 4000},
    "ips": ["10.1.1.5/24"],
    "mac": "0a:58:0a:01:01:05",
    "infinibandGUID": "c2:11:22:33:44:55:66:77",
    "deviceID": "0000:03:00.1"})");
  CHECK(runtime_config_for(e).dump() == expected.dump());

  auto plain = parse_networks_annotation("a", "podns")[0];
  CHECK(runtime_config_for(plain) == Json::object());
}

TEST_CASE("CNI_ARGS additions for an element", "[k8s]") {
  auto both = parse_networks_annotation(
      R"([{"name":"a","ips":["10.1.1.5/24","2001:db8::5/64"],"mac":"0a:58:0a:01:01:05"}])", "podns")[0];
  CHECK(cni_args_for(both) == "IP=10.1.1.5/24,2001:db8::5/64;MAC=0a:58:0a:01:01:05");
  auto mac_only = parse_networks_annotation(R"([{"name":"a","mac":"0a:58:0a:01:01:05"}])", "podns")[0];
  CHECK(cni_args_for(mac_only) == "MAC=0a:58:0a:01:01:05");
  auto ip_only = parse_networks_annotation(R"([{"name":"a","ips":["10.1.1.5"]}])", "podns")[0];
  CHECK(cni_args_for(ip_only) == "IP=10.1.1.5");
  CHECK(cni_args_for(parse_networks_annotation("a", "podns")[0]).empty());
}

TEST_CASE("hardware addresses are parsed like Go's net.ParseMAC", "[k8s]") {
  CHECK(is_valid_hardware_address("00:00:5e:00:53:01"));
  CHECK(is_valid_hardware_address("00-00-5E-00-53-01"));
  CHECK(is_valid_hardware_address("0000.5e00.5301"));
  CHECK(is_valid_hardware_address("02:00:5e:10:00:00:00:01"));
  CHECK(is_valid_hardware_address("0000.5e00.5301.0203"));
  CHECK(is_valid_hardware_address("00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"));
  CHECK_FALSE(is_valid_hardware_address("00:00:5e:00:53"));
  CHECK_FALSE(is_valid_hardware_address("00:00:5e:00:53:01:02"));
  CHECK_FALSE(is_valid_hardware_address("00:00:5e-00:53:01"));
  CHECK_FALSE(is_valid_hardware_address("00:00:5e:00:53:0g"));
  CHECK_FALSE(is_valid_hardware_address("0000.5e00-5301"));
  CHECK_FALSE(is_valid_hardware_address("000:05e:005:301"));
  CHECK_FALSE(is_valid_hardware_address(""));
}

TEST_CASE("IP and CIDR validation follows Go", "[k8s]") {
  CHECK(is_valid_ip("10.1.1.1"));
  CHECK(is_valid_ip("2001:db8::1"));
  CHECK(is_valid_ip("::ffff:10.1.1.1"));
  CHECK_FALSE(is_valid_ip("10.1.1.01"));
  CHECK_FALSE(is_valid_ip("10.1.1.1 "));
  CHECK_FALSE(is_valid_ip(std::string("10.1.1.1\0x", 10)));
  CHECK_FALSE(is_valid_ip(""));
  CHECK(is_valid_cidr("10.1.1.1/0"));
  CHECK(is_valid_cidr("10.1.1.1/32"));
  CHECK(is_valid_cidr("2001:db8::1/128"));
  CHECK_FALSE(is_valid_cidr("10.1.1.1/"));
  CHECK_FALSE(is_valid_cidr("10.1.1.1/-1"));
  CHECK_FALSE(is_valid_cidr("10.1.1.1/24/1"));
  CHECK_FALSE(is_valid_cidr("10.1.1.1"));
}

TEST_CASE("error messages stay valid UTF-8 for hostile input", "[k8s]") {
  std::string bad_json = parse_error("[\xc3]");
  CHECK_NOTHROW(Json(bad_json).dump());
  std::string long_name = std::string(63, 'a') + "\xc3\xa9" + std::string(10, 'a');
  std::string msg = parse_error(long_name);
  CHECK(msg.find(std::string(63, 'a') + "...'") != std::string::npos);
  CHECK_NOTHROW(Json(msg).dump());
  std::string raw_bytes = parse_error("net\xff\xfe");
  CHECK(raw_bytes.find("net\xEF\xBF\xBD\xEF\xBF\xBD'") != std::string::npos);
  CHECK_NOTHROW(Json(raw_bytes).dump());
  CHECK(manifold::util::sanitize_utf8("ok \xc3\xa9 \xed\xa0\x80") ==
        "ok \xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("go_quote quotes like Go's %q: short escapes, \\xNN for other controls, UTF-8 kept", "[k8s]") {
  using selection_syntax::go_quote;
  CHECK(go_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(go_quote("\a\b\f\n\r\t\v") == "\"\\a\\b\\f\\n\\r\\t\\v\"");
  CHECK(go_quote(std::string("\x01\x1f\x7f", 3)) == "\"\\x01\\x1f\\x7f\"");
  CHECK(go_quote("<é/>") == "\"<é/>\"");
}
