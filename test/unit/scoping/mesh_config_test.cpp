// Unit tests for the layered mesh configuration: defaults, per-key layering, every accepted form of
// every key, and each validation error (code 7, naming the field).
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "scoping/mesh_config.h"

using namespace manifold;
using namespace manifold::firewall;
using namespace manifold::scoping;

namespace {

MeshConfig parse(const char* text) { return parse_mesh_config(Json::parse(text)); }

// The message of the InvalidConfig error `text` must cause.
std::string error_of(const std::string& text) {
  try {
    parse_mesh_config(Json::parse(text));
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 7);
    return e.msg();
  }
  FAIL("accepted: " << text);
  return {};
}

}  // namespace

TEST_CASE("firewall: mesh defaults: disabled, Linkerd ports", "[firewall]") {
  const MeshConfig cfg = merge_mesh_layers(nullptr, nullptr, nullptr);
  CHECK_FALSE(cfg.enabled);
  CHECK_FALSE(cfg.active());
  CHECK(cfg.inbound_port == 4143);
  CHECK(cfg.outbound_port == 4140);
  CHECK(cfg.proxy_uid == std::optional<std::uint32_t>(2102));
  CHECK_FALSE(cfg.proxy_gid);
  CHECK(cfg.inbound_ports_to_ignore == std::vector<PortRange>{{4190, 4190}, {4191, 4191}});
  CHECK(cfg.outbound_ports_to_ignore.empty());
  CHECK(cfg.redirect_inbound);
  CHECK(cfg.redirect_outbound);
  CHECK(cfg.iptables_mode == IptablesMode::Auto);
  CHECK(cfg.ipv6 == Ipv6Mode::Auto);
  CHECK(cfg.lock_wait_seconds == 30);
}

TEST_CASE("firewall: mesh layers: later layer wins per key", "[firewall]") {
  const Json top = Json::parse(R"({"inboundPort": 1000, "outboundPort": 1001, "proxyUID": 1, "iptablesMode": "nft"})");
  const Json nad = Json::parse(R"({"enabled": true, "outboundPort": 2001, "proxyUID": 2})");
  const Json pod = Json::parse(R"({"proxyUID": 3, "redirectInbound": false})");
  const MeshConfig cfg = merge_mesh_layers(top, nad, pod);
  CHECK(cfg.enabled);
  CHECK(cfg.inbound_port == 1000);                          // only the top level set it
  CHECK(cfg.outbound_port == 2001);                         // the NAD overrides the top level
  CHECK(cfg.proxy_uid == std::optional<std::uint32_t>(3));  // the pod overrides both
  CHECK_FALSE(cfg.redirect_inbound);
  CHECK(cfg.iptables_mode == IptablesMode::Nft);
  CHECK(cfg.active());

  // A later layer can switch the mesh off again.
  CHECK_FALSE(merge_mesh_layers(top, nad, Json::parse(R"({"enabled": false})")).active());
  // Both directions off: enabled but nothing to install.
  CHECK_FALSE(merge_mesh_layers(nad, Json::parse(R"({"redirectInbound": false, "redirectOutbound": false})"), nullptr)
                  .active());
}

TEST_CASE("firewall: mesh layers: each layer must be an object or null", "[firewall]") {
  for (const auto& [top, nad, pod, where] : {std::tuple{Json(1), Json(nullptr), Json(nullptr), "meta-plugin config"},
                                             std::tuple{Json(nullptr), Json::array(), Json(nullptr), "network config"},
                                             std::tuple{Json(nullptr), Json(nullptr), Json("x"), "pod cni-args"}}) {
    try {
      merge_mesh_layers(top, nad, pod);
      FAIL("accepted a non-object layer");
    } catch (const cni::CniError& e) {
      CHECK(e.code() == 7);
      CHECK_THAT(e.msg(), Catch::Contains(where));
    }
  }
}

TEST_CASE("firewall: mesh config: null resets a key, and means no exemption for IDs", "[firewall]") {
  const MeshConfig cfg = merge_mesh_layers(Json::parse(R"({"inboundPort": 1000, "proxyUID": 5, "proxyGID": 6})"),
                                           Json::parse(R"({"inboundPort": null, "proxyUID": null})"), nullptr);
  CHECK(cfg.inbound_port == 4143);
  CHECK_FALSE(cfg.proxy_uid);
  CHECK(cfg.proxy_gid == std::optional<std::uint32_t>(6));
}

TEST_CASE("firewall: mesh config: every accepted form", "[firewall]") {
  const MeshConfig cfg = parse(R"({
    "enabled": true, "inboundPort": 15006, "outboundPort": 15001, "proxyUID": "1337", "proxyGID": 0,
    "inboundPortsToIgnore": [15020, "15021", "15090-15099", "7-7"],
    "outboundPortsToIgnore": "53, 80-81",
    "inboundSubnetsToIgnore": ["10.1.2.3/16", "fd00::1/8", "10.1.0.0/16"],
    "outboundSubnetsToIgnore": ["192.168.5.7/32"],
    "inboundSubnetsToIgnoreV4": ["172.16.0.0/12"], "outboundSubnetsToIgnoreV6": ["2001:db8::/32"],
    "redirectInbound": true, "redirectOutbound": true, "iptablesMode": "legacy", "ipv6": false,
    "lockWaitSeconds": 5})");
  CHECK(cfg.inbound_port == 15006);
  CHECK(cfg.outbound_port == 15001);
  CHECK(cfg.proxy_uid == std::optional<std::uint32_t>(1337));
  CHECK(cfg.proxy_gid == std::optional<std::uint32_t>(0));
  CHECK(cfg.inbound_ports_to_ignore == std::vector<PortRange>{{15020, 15020}, {15021, 15021}, {15090, 15099}, {7, 7}});
  CHECK(cfg.outbound_ports_to_ignore == std::vector<PortRange>{{53, 53}, {80, 81}});
  REQUIRE(cfg.inbound_subnets_to_ignore_v4.size() == 2);  // the duplicate network is dropped
  CHECK(cfg.inbound_subnets_to_ignore_v4[0].network_str() == "10.1.0.0/16");
  CHECK(cfg.inbound_subnets_to_ignore_v4[1].network_str() == "172.16.0.0/12");
  REQUIRE(cfg.inbound_subnets_to_ignore_v6.size() == 1);
  CHECK(cfg.inbound_subnets_to_ignore_v6[0].network_str() == "fd00::/8");
  CHECK(cfg.outbound_subnets(Family::V4).size() == 1);
  CHECK(cfg.outbound_subnets(Family::V6).size() == 1);
  CHECK(cfg.iptables_mode == IptablesMode::Legacy);
  CHECK(cfg.ipv6 == Ipv6Mode::Never);
  CHECK(cfg.lock_wait_seconds == 5);
  CHECK(forced_backend(cfg) == std::optional<Backend>(Backend::Legacy));
  CHECK(parse(R"({"ipv6": true})").ipv6 == Ipv6Mode::Always);
  CHECK(parse(R"({"ipv6": "auto", "iptablesMode": "auto"})").ipv6 == Ipv6Mode::Auto);
  CHECK_FALSE(forced_backend(parse(R"({"iptablesMode": "auto"})")));
  CHECK(forced_backend(parse(R"({"iptablesMode": "nft"})")) == std::optional<Backend>(Backend::Nft));
}

TEST_CASE("firewall: mesh config: each bad field is error 7 naming it", "[firewall]") {
  // bad ports
  CHECK_THAT(error_of(R"({"inboundPort": 0})"), Catch::Contains("mesh.inboundPort"));
  CHECK_THAT(error_of(R"({"inboundPort": 65536})"), Catch::Contains("mesh.inboundPort"));
  CHECK_THAT(error_of(R"({"outboundPort": "4140"})"), Catch::Contains("mesh.outboundPort"));
  CHECK_THAT(error_of(R"({"outboundPort": 4140.5})"), Catch::Contains("mesh.outboundPort"));
  CHECK_THAT(error_of(R"({"inboundPortsToIgnore": ["http"]})"), Catch::Contains("mesh.inboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"inboundPortsToIgnore": ["0"]})"), Catch::Contains("mesh.inboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"inboundPortsToIgnore": ["70000"]})"), Catch::Contains("mesh.inboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"outboundPortsToIgnore": ["90-80"]})"), Catch::Contains("mesh.outboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"outboundPortsToIgnore": ["80-"]})"), Catch::Contains("mesh.outboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"outboundPortsToIgnore": ["1-2-3"]})"), Catch::Contains("mesh.outboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"outboundPortsToIgnore": [true]})"), Catch::Contains("mesh.outboundPortsToIgnore"));
  CHECK_THAT(error_of(R"({"outboundPortsToIgnore": {"a": 1}})"), Catch::Contains("mesh.outboundPortsToIgnore"));
  // non-numeric or out-of-range IDs
  CHECK_THAT(error_of(R"({"proxyUID": "linkerd"})"), Catch::Contains("mesh.proxyUID"));
  CHECK_THAT(error_of(R"({"proxyUID": -1})"), Catch::Contains("mesh.proxyUID"));
  CHECK_THAT(error_of(R"({"proxyUID": 4294967295})"), Catch::Contains("mesh.proxyUID"));
  CHECK_THAT(error_of(R"({"proxyGID": true})"), Catch::Contains("mesh.proxyGID"));
  CHECK_THAT(error_of(R"({"proxyGID": "12a"})"), Catch::Contains("mesh.proxyGID"));
  // CIDRs: malformed, or the wrong family in a family-specific list
  CHECK_THAT(error_of(R"({"inboundSubnetsToIgnore": ["10.0.0.0"]})"), Catch::Contains("mesh.inboundSubnetsToIgnore"));
  CHECK_THAT(error_of(R"({"inboundSubnetsToIgnore": ["10.0.0.0/33"]})"),
             Catch::Contains("mesh.inboundSubnetsToIgnore"));
  CHECK_THAT(error_of(R"({"outboundSubnetsToIgnore": [10]})"), Catch::Contains("mesh.outboundSubnetsToIgnore"));
  CHECK_THAT(error_of(R"({"inboundSubnetsToIgnoreV4": ["fd00::/8"]})"),
             Catch::Contains("mesh.inboundSubnetsToIgnoreV4") && Catch::Contains("not an IPv4 CIDR"));
  CHECK_THAT(error_of(R"({"outboundSubnetsToIgnoreV6": ["10.0.0.0/8"]})"),
             Catch::Contains("mesh.outboundSubnetsToIgnoreV6") && Catch::Contains("not an IPv6 CIDR"));
  CHECK_THAT(error_of(R"({"inboundSubnetsToIgnoreV6": ["10.0.0.0/8"]})"),
             Catch::Contains("mesh.inboundSubnetsToIgnoreV6"));
  CHECK_THAT(error_of(R"({"outboundSubnetsToIgnoreV4": ["::/0"]})"), Catch::Contains("mesh.outboundSubnetsToIgnoreV4"));
  // enums, booleans, numbers
  CHECK_THAT(error_of(R"({"iptablesMode": "plain"})"), Catch::Contains("mesh.iptablesMode"));
  CHECK_THAT(error_of(R"({"iptablesMode": 1})"), Catch::Contains("mesh.iptablesMode"));
  CHECK_THAT(error_of(R"({"ipv6": "yes"})"), Catch::Contains("mesh.ipv6"));
  CHECK_THAT(error_of(R"({"enabled": "true"})"), Catch::Contains("mesh.enabled"));
  CHECK_THAT(error_of(R"({"redirectInbound": 1})"), Catch::Contains("mesh.redirectInbound"));
  CHECK_THAT(error_of(R"({"redirectOutbound": null, "redirectInbound": []})"), Catch::Contains("mesh.redirectInbound"));
  CHECK_THAT(error_of(R"({"lockWaitSeconds": 0})"), Catch::Contains("mesh.lockWaitSeconds"));
  CHECK_THAT(error_of(R"({"lockWaitSeconds": 601})"), Catch::Contains("mesh.lockWaitSeconds"));
  // unknown keys (typos must not be ignored silently)
  CHECK_THAT(error_of(R"({"proxyUid": 2102})"), Catch::Contains("mesh.proxyUid") && Catch::Contains("unknown key"));
  CHECK_THAT(error_of(R"([1])"), Catch::Contains("not an object"));
}

TEST_CASE("firewall: mesh config: hostile sizes and bytes are bounded", "[firewall]") {
  Json many = Json::object();
  many["inboundPortsToIgnore"] = Json::array();
  for (int i = 1; i <= 257; ++i) many["inboundPortsToIgnore"].push_back(i);
  CHECK_THROWS_AS(parse_mesh_config(many), cni::CniError);
  Json long_text = Json::object();
  long_text["outboundPortsToIgnore"] = std::string(5000, '1');
  CHECK_THROWS_AS(parse_mesh_config(long_text), cni::CniError);
  // A bad value containing invalid UTF-8 is echoed without throwing a JSON exception.
  Json bad = Json::object();
  bad["inboundPort"] = Json::array({std::string("\xff\xfe")});
  try {
    parse_mesh_config(bad);
    FAIL("accepted");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 7);
  }
  Json long_key = Json::object();
  long_key[std::string(1000, 'k')] = 1;
  try {
    parse_mesh_config(long_key);
    FAIL("accepted");
  } catch (const cni::CniError& e) {
    CHECK(e.msg().size() < 200);
  }
}

TEST_CASE("firewall: interface names for chain names", "[firewall]") {
  try {
    validate_ifname("net 1");
    FAIL("accepted");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 7);
    CHECK_THAT(e.msg(), Catch::Contains("net 1"));
  }
  CHECK_THROWS_AS(validate_ifname("abcdefghijklmnop"), cni::CniError);
}

TEST_CASE("firewall: port range text", "[firewall]") {
  CHECK(parse_port_range("80") == std::optional<PortRange>({80, 80}));
  CHECK(parse_port_range("1-65535") == std::optional<PortRange>({1, 65535}));
  CHECK_FALSE(parse_port_range(""));
  CHECK_FALSE(parse_port_range("-"));
  CHECK_FALSE(parse_port_range("65536"));
  CHECK_FALSE(parse_port_range("+80"));
  CHECK_FALSE(parse_port_range("80:81"));
  CHECK_FALSE(parse_port_range("99999999999999999999"));
  CHECK(PortRange{5000, 5010}.str() == "5000:5010");
  CHECK(PortRange{7, 7}.str() == "7");
}

TEST_CASE("firewall: families follow the attachment's addresses and the ipv6 key", "[firewall]") {
  MeshConfig cfg;
  using V = std::vector<Family>;
  CHECK(mesh_families(cfg, true, false) == V{Family::V4});
  CHECK(mesh_families(cfg, true, true) == V{Family::V4, Family::V6});
  CHECK(mesh_families(cfg, false, true) == V{Family::V6});
  CHECK(mesh_families(cfg, false, false) == V{Family::V4});
  cfg.ipv6 = Ipv6Mode::Never;
  CHECK(mesh_families(cfg, true, true) == V{Family::V4});
  CHECK(mesh_families(cfg, false, true) == V{Family::V4});
  cfg.ipv6 = Ipv6Mode::Always;
  CHECK(mesh_families(cfg, true, false) == V{Family::V4, Family::V6});
}
