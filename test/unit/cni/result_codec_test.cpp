// Unit tests for cni/result_codec.h: decoding every result shape, encoding golden JSON for every
// family, the 7x7 version conversion matrix (what survives and what is dropped), and every class
// of bad input with its CNI error code.
#include "cni/result_codec.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "cni/error.h"
#include "cni/version.h"
#include "cni_error_of.h"

using namespace manifold;
using namespace manifold::cni;
using manifold::test::code_of;
using manifold::test::message_of;

namespace {

// Rich results per shape: dual-stack, 2 interfaces, 3 IPs (two IPv4), routes, DNS.
const char* kV02Text = R"({
  "cniVersion": "0.2.0",
  "ip4": {"ip": "10.1.2.3/24", "gateway": "10.1.2.1",
          "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}, {"dst": "10.96.0.0/12"}]},
  "ip6": {"ip": "2001:DB8::3/64", "gateway": "2001:db8::1",
          "routes": [{"dst": "::/0", "gw": "2001:db8::1"}]},
  "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local",
          "search": ["svc.cluster.local"], "options": ["ndots:5"]}
})";

const char* kV04Text = R"({
  "cniVersion": "0.4.0",
  "interfaces": [{"name": "cni0", "mac": "0a:58:0a:01:02:01"},
                 {"name": "eth0", "mac": "0a:58:0a:01:02:03", "sandbox": "/var/run/netns/pod"}],
  "ips": [{"version": "4", "interface": 1, "address": "10.1.2.3/24", "gateway": "10.1.2.1"},
          {"version": "4", "interface": 1, "address": "10.1.2.4/24"},
          {"version": "6", "interface": 1, "address": "2001:db8::3/64", "gateway": "2001:db8::1"}],
  "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}, {"dst": "10.96.0.0/12"},
             {"dst": "::/0", "gw": "2001:db8::1"}],
  "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local",
          "search": ["svc.cluster.local"], "options": ["ndots:5"]}
})";

const char* kV100Text = R"({
  "cniVersion": "1.0.0",
  "interfaces": [{"name": "cni0", "mac": "0a:58:0a:01:02:01"},
                 {"name": "eth0", "mac": "0a:58:0a:01:02:03", "sandbox": "/var/run/netns/pod"}],
  "ips": [{"interface": 1, "address": "10.1.2.3/24", "gateway": "10.1.2.1"},
          {"interface": 1, "address": "10.1.2.4/24"},
          {"interface": 1, "address": "2001:db8::3/64", "gateway": "2001:db8::1"}],
  "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}, {"dst": "10.96.0.0/12"},
             {"dst": "::/0", "gw": "2001:db8::1"}],
  "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local",
          "search": ["svc.cluster.local"], "options": ["ndots:5"]}
})";

const char* kV110Text = R"({
  "cniVersion": "1.1.0",
  "interfaces": [{"name": "cni0", "mac": "0a:58:0a:01:02:01", "mtu": 9000},
                 {"name": "eth0", "mac": "0a:58:0a:01:02:03", "mtu": 1450,
                  "sandbox": "/var/run/netns/pod", "socketPath": "/run/vhost/sock0",
                  "pciID": "0000:3b:00.2"}],
  "ips": [{"interface": 1, "address": "10.1.2.3/24", "gateway": "10.1.2.1"},
          {"interface": 1, "address": "10.1.2.4/24"},
          {"interface": 1, "address": "2001:db8::3/64", "gateway": "2001:db8::1"}],
  "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1", "mtu": 1400, "advmss": 1360,
              "priority": 100, "table": 0, "scope": 0},
             {"dst": "10.96.0.0/12", "table": 5001, "scope": 253},
             {"dst": "::/0", "gw": "2001:db8::1"}],
  "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local",
          "search": ["svc.cluster.local"], "options": ["ndots:5"]}
})";

Json rich_json(const std::string& version) {
  const auto v = *SpecVersion::parse(version);
  const char* text = kV110Text;
  switch (result_family(v)) {
    case ResultFamily::V02:
      text = kV02Text;
      break;
    case ResultFamily::V04:
      text = kV04Text;
      break;
    case ResultFamily::V1:
      text = version == "1.0.0" ? kV100Text : kV110Text;
      break;
  }
  Json j = Json::parse(text);
  j["cniVersion"] = version;
  return j;
}

Dns rich_dns() { return Dns{{"10.96.0.10"}, "cluster.local", {"svc.cluster.local"}, {"ndots:5"}}; }

Result decode_text(const std::string& text, const std::string& fallback = "1.0.0") {
  return decode_result_text(text, fallback);
}

}  // namespace

TEST_CASE("decode a rich 1.1.0 result into the internal model", "[cni]") {
  const Result r = decode_result(rich_json("1.1.0"), "0.4.0");
  CHECK(r.cni_version == "1.1.0");
  REQUIRE(r.interfaces.size() == 2);
  CHECK(r.interfaces[0] == Interface{"cni0", "0a:58:0a:01:02:01", 9000, "", "", ""});
  CHECK(r.interfaces[1] ==
        Interface{"eth0", "0a:58:0a:01:02:03", 1450, "/var/run/netns/pod", "/run/vhost/sock0", "0000:3b:00.2"});
  REQUIRE(r.ips.size() == 3);
  CHECK(r.ips[0] == IpConfig{1, "10.1.2.3/24", "10.1.2.1"});
  CHECK(r.ips[1] == IpConfig{1, "10.1.2.4/24", ""});
  CHECK(r.ips[2] == IpConfig{1, "2001:db8::3/64", "2001:db8::1"});
  REQUIRE(r.routes.size() == 3);
  CHECK(r.routes[0] == Route{"0.0.0.0/0", "10.1.2.1", 1400, 1360, 100, 0, 0});
  CHECK(r.routes[1] == Route{"10.96.0.0/12", "", {}, {}, {}, 5001, 253});
  CHECK(r.routes[2] == Route{"::/0", "2001:db8::1", {}, {}, {}, {}, {}});
  CHECK(r.dns == rich_dns());
}

TEST_CASE("decode a 0.2.0 result: ips in ip4/ip6 order, no interfaces, canonical text", "[cni]") {
  const Result r = decode_result(rich_json("0.2.0"), "1.0.0");
  CHECK(r.cni_version == "0.2.0");
  CHECK(r.interfaces.empty());
  REQUIRE(r.ips.size() == 2);
  CHECK(r.ips[0] == IpConfig{std::nullopt, "10.1.2.3/24", "10.1.2.1"});
  CHECK(r.ips[1] == IpConfig{std::nullopt, "2001:db8::3/64", "2001:db8::1"});
  REQUIRE(r.routes.size() == 3);
  CHECK(r.routes[1] == Route{"10.96.0.0/12", "", {}, {}, {}, {}, {}});
  CHECK(r.routes[2].dst == "::/0");
  CHECK(r.dns == rich_dns());
}

TEST_CASE("every version converts to every version", "[cni]") {
  const std::string from = GENERATE(from_range(supported_versions()));
  const std::string to = GENERATE(from_range(supported_versions()));
  INFO(from << " -> " << to);
  const auto family = [](const std::string& v) { return result_family(*SpecVersion::parse(v)); };
  const bool via_v02 = family(from) == ResultFamily::V02 || family(to) == ResultFamily::V02;
  const bool keeps_v11 = from == "1.1.0" && to == "1.1.0";

  const Result source = decode_result(rich_json(from), "");
  const Json encoded = encode_result(source, to);
  CHECK(encoded["cniVersion"] == to);
  const Result r = decode_result_text(encoded.dump(), "");
  CHECK(r.cni_version == to);

  // Shape of the encoded JSON itself.
  if (family(to) == ResultFamily::V02) {
    CHECK_FALSE(encoded.contains("interfaces"));
    CHECK_FALSE(encoded.contains("ips"));
    CHECK_FALSE(encoded.contains("routes"));
    CHECK(encoded.contains("ip4"));
    CHECK(encoded.contains("ip6"));
  } else {
    CHECK_FALSE(encoded.contains("ip4"));
    for (const Json& ip : encoded["ips"]) CHECK(ip.contains("version") == (family(to) == ResultFamily::V04));
  }

  // DNS always survives.
  CHECK(r.dns == rich_dns());

  // Interfaces survive unless either end is 0.1/0.2; the 1.1 fields only between 1.1 results.
  if (via_v02) {
    CHECK(r.interfaces.empty());
  } else {
    REQUIRE(r.interfaces.size() == 2);
    CHECK(r.interfaces[0].name == "cni0");
    CHECK(r.interfaces[1].name == "eth0");
    CHECK(r.interfaces[1].mac == "0a:58:0a:01:02:03");
    CHECK(r.interfaces[1].sandbox == "/var/run/netns/pod");
    CHECK(r.interfaces[1].mtu.has_value() == keeps_v11);
    CHECK(r.interfaces[1].socket_path.empty() != keeps_v11);
    CHECK(r.interfaces[1].pci_id.empty() != keeps_v11);
    if (keeps_v11) CHECK(r.interfaces[1] == source.interfaces[1]);
  }

  // IPs: going through 0.1/0.2 keeps only the first of each family and loses indexes.
  if (via_v02) {
    REQUIRE(r.ips.size() == 2);
    CHECK(r.ips[0] == IpConfig{std::nullopt, "10.1.2.3/24", "10.1.2.1"});
    CHECK(r.ips[1] == IpConfig{std::nullopt, "2001:db8::3/64", "2001:db8::1"});
  } else {
    REQUIRE(r.ips.size() == 3);
    CHECK(r.ips[0] == IpConfig{1, "10.1.2.3/24", "10.1.2.1"});
    CHECK(r.ips[1] == IpConfig{1, "10.1.2.4/24", ""});
    CHECK(r.ips[2] == IpConfig{1, "2001:db8::3/64", "2001:db8::1"});
  }

  // Routes: destination and gateway always survive; the 1.1 attributes only 1.1 → 1.1.
  REQUIRE(r.routes.size() == 3);
  CHECK(r.routes[0].dst == "0.0.0.0/0");
  CHECK(r.routes[0].gw == "10.1.2.1");
  CHECK(r.routes[1].dst == "10.96.0.0/12");
  CHECK(r.routes[1].gw.empty());
  CHECK(r.routes[2].dst == "::/0");
  CHECK(r.routes[2].gw == "2001:db8::1");
  CHECK(r.routes[0].mtu.has_value() == keeps_v11);
  CHECK(r.routes[0].advmss.has_value() == keeps_v11);
  CHECK(r.routes[0].priority.has_value() == keeps_v11);
  CHECK(r.routes[1].table.has_value() == keeps_v11);
  CHECK(r.routes[1].scope.has_value() == keeps_v11);
  if (keeps_v11) CHECK(r.routes == source.routes);

  // Same-version round trip is lossless.
  if (from == to) CHECK(r == source);
}

TEST_CASE("golden JSON per family", "[cni]") {
  const Result r = decode_result(rich_json("1.1.0"), "");

  CHECK(encode_result(r, "0.2.0").dump() == R"({"cniVersion":"0.2.0",)"
                                            R"("ip4":{"ip":"10.1.2.3/24","gateway":"10.1.2.1","routes":[)"
                                            R"({"dst":"0.0.0.0/0","gw":"10.1.2.1"},{"dst":"10.96.0.0/12"}]},)"
                                            R"("ip6":{"ip":"2001:db8::3/64","gateway":"2001:db8::1","routes":[)"
                                            R"({"dst":"::/0","gw":"2001:db8::1"}]},)"
                                            R"("dns":{"nameservers":["10.96.0.10"],"domain":"cluster.local",)"
                                            R"("search":["svc.cluster.local"],"options":["ndots:5"]}})");

  CHECK(encode_result(r, "0.4.0").dump() ==
        R"({"cniVersion":"0.4.0",)"
        R"("interfaces":[{"name":"cni0","mac":"0a:58:0a:01:02:01"},)"
        R"({"name":"eth0","mac":"0a:58:0a:01:02:03","sandbox":"/var/run/netns/pod"}],)"
        R"("ips":[{"version":"4","interface":1,"address":"10.1.2.3/24","gateway":"10.1.2.1"},)"
        R"({"version":"4","interface":1,"address":"10.1.2.4/24"},)"
        R"({"version":"6","interface":1,"address":"2001:db8::3/64","gateway":"2001:db8::1"}],)"
        R"("routes":[{"dst":"0.0.0.0/0","gw":"10.1.2.1"},{"dst":"10.96.0.0/12"},)"
        R"({"dst":"::/0","gw":"2001:db8::1"}],)"
        R"("dns":{"nameservers":["10.96.0.10"],"domain":"cluster.local",)"
        R"("search":["svc.cluster.local"],"options":["ndots:5"]}})");

  CHECK(encode_result(r, "1.0.0").dump() ==
        R"({"cniVersion":"1.0.0",)"
        R"("interfaces":[{"name":"cni0","mac":"0a:58:0a:01:02:01"},)"
        R"({"name":"eth0","mac":"0a:58:0a:01:02:03","sandbox":"/var/run/netns/pod"}],)"
        R"("ips":[{"interface":1,"address":"10.1.2.3/24","gateway":"10.1.2.1"},)"
        R"({"interface":1,"address":"10.1.2.4/24"},)"
        R"({"interface":1,"address":"2001:db8::3/64","gateway":"2001:db8::1"}],)"
        R"("routes":[{"dst":"0.0.0.0/0","gw":"10.1.2.1"},{"dst":"10.96.0.0/12"},)"
        R"({"dst":"::/0","gw":"2001:db8::1"}],)"
        R"("dns":{"nameservers":["10.96.0.10"],"domain":"cluster.local",)"
        R"("search":["svc.cluster.local"],"options":["ndots:5"]}})");

  CHECK(encode_result(r, "1.1.0").dump() ==
        R"({"cniVersion":"1.1.0",)"
        R"("interfaces":[{"name":"cni0","mac":"0a:58:0a:01:02:01","mtu":9000},)"
        R"({"name":"eth0","mac":"0a:58:0a:01:02:03","mtu":1450,"sandbox":"/var/run/netns/pod",)"
        R"("socketPath":"/run/vhost/sock0","pciID":"0000:3b:00.2"}],)"
        R"("ips":[{"interface":1,"address":"10.1.2.3/24","gateway":"10.1.2.1"},)"
        R"({"interface":1,"address":"10.1.2.4/24"},)"
        R"({"interface":1,"address":"2001:db8::3/64","gateway":"2001:db8::1"}],)"
        R"("routes":[{"dst":"0.0.0.0/0","gw":"10.1.2.1","mtu":1400,"advmss":1360,)"
        R"("priority":100,"table":0,"scope":0},)"
        R"({"dst":"10.96.0.0/12","table":5001,"scope":253},{"dst":"::/0","gw":"2001:db8::1"}],)"
        R"("dns":{"nameservers":["10.96.0.10"],"domain":"cluster.local",)"
        R"("search":["svc.cluster.local"],"options":["ndots:5"]}})");
}

TEST_CASE("minimal results: empty fields omitted, dns written as {}", "[cni]") {
  Result r;
  r.ips = {IpConfig{std::nullopt, "10.1.2.3/24", ""}};
  CHECK(encode_result(r, "0.1.0").dump() == R"({"cniVersion":"0.1.0","ip4":{"ip":"10.1.2.3/24"},"dns":{}})");
  CHECK(encode_result(r, "").dump() == R"({"cniVersion":"0.1.0","ip4":{"ip":"10.1.2.3/24"},"dns":{}})");
  CHECK(encode_result(r, "0.3.0").dump() ==
        R"({"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{}})");
  CHECK(encode_result(r, "1.1.0").dump() == R"({"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}],"dns":{}})");
  CHECK(encode_result(Result{}, "1.0.0").dump() == R"({"cniVersion":"1.0.0","dns":{}})");

  // A 0.2 downgrade keeps routes only for families that still have an address.
  r.routes = {Route{"::/0", "fe80::1", {}, {}, {}, {}, {}}, Route{"10.0.0.0/8", "10.1.2.1", 1300, {}, {}, 7, {}}};
  CHECK(encode_result(r, "0.2.0").dump() == R"({"cniVersion":"0.2.0","ip4":{"ip":"10.1.2.3/24","routes":[)"
                                            R"({"dst":"10.0.0.0/8","gw":"10.1.2.1"}]},"dns":{}})");
}

TEST_CASE("cniVersion falls back to the config's version", "[cni]") {
  Json j = rich_json("0.4.0");
  j.erase("cniVersion");
  const Result r = decode_result(j, "0.4.0");
  CHECK(r.cni_version == "0.4.0");
  CHECK(r.ips.size() == 3);

  j["cniVersion"] = "";
  CHECK(decode_result(j, "0.3.1").cni_version == "0.3.1");

  // Without either, the result is read as 0.1.0 (libcni): the 0.4-shaped keys mean nothing there.
  j.erase("cniVersion");
  const Result old = decode_result(j, "");
  CHECK(old.cni_version == "0.1.0");
  CHECK(old.ips.empty());
  CHECK(old.dns == rich_dns());

  // The result's own version wins over the fallback.
  CHECK(decode_result(rich_json("1.1.0"), "0.2.0").cni_version == "1.1.0");
  CHECK(decode_text(R"({"ips":[{"address":"10.0.0.1/8"}]})", "1.0.0").ips.size() == 1);
}

TEST_CASE("unsupported versions are error 1", "[cni]") {
  for (const char* bad : {"0.5.0", "2.0.0", "1.0", "v1.0.0", "1.0.0 "}) {
    INFO(bad);
    Json j = rich_json("1.0.0");
    j["cniVersion"] = bad;
    CHECK(code_of([&] { decode_result(j, "1.0.0"); }) == 1);
    CHECK(code_of([&] { encode_result(Result{}, bad); }) == 1);
  }
  CHECK(code_of([&] { decode_text(R"({"ips":[]})", "9.9.9"); }) == 1);
}

TEST_CASE("a 0.1/0.2 target with no IP address is error 1", "[cni]") {
  Result r = decode_result(rich_json("1.0.0"), "");
  r.ips.clear();
  CHECK(code_of([&] { encode_result(r, "0.2.0"); }) == 1);
  CHECK(code_of([&] { encode_result(r, "0.1.0"); }) == 1);
  CHECK_NOTHROW(encode_result(r, "0.3.1"));
}

TEST_CASE("malformed results are error 6 naming the offending field", "[cni]") {
  struct Case {
    const char* json;
    const char* fallback;
    const char* mentions;
  };
  const Case cases[] = {
      {R"([])", "1.0.0", "expected an object"},
      {R"("result")", "1.0.0", "expected an object"},
      {R"({"cniVersion": 1})", "1.0.0", "cniVersion"},
      {R"({"ips": {}})", "1.0.0", "ips: expected an array"},
      {R"({"ips": "10.0.0.1/8"})", "1.0.0", "ips: expected an array"},
      {R"({"ips": [5]})", "1.0.0", "ips[0]: expected an object"},
      {R"({"ips": [{}]})", "1.0.0", "ips[0].address: missing"},
      {R"({"ips": [{"address": 10}]})", "1.0.0", "ips[0].address: expected a string"},
      {R"({"ips": [{"address": "10.0.0.1"}]})", "1.0.0", "ips[0].address"},
      {R"({"ips": [{"address": "10.0.0.1/33"}]})", "1.0.0", "is not a valid CIDR"},
      {R"({"ips": [{"address": "10.0.0.300/8"}]})", "1.0.0", "ips[0].address"},
      {R"({"ips": [{"address": "10.0.0.1/8", "gateway": "10.0.0"}]})", "1.0.0", "ips[0].gateway"},
      {R"({"ips": [{"address": "10.0.0.1/8", "gateway": "fe80::1"}]})", "1.0.0", "ips[0].gateway"},
      {R"({"ips": [{"address": "10.0.0.1/8", "gateway": 7}]})", "1.0.0", "ips[0].gateway"},
      {R"({"ips": [{"address": "10.0.0.1/8", "interface": 0}]})", "1.0.0", "ips[0].interface: index 0 is out of range"},
      {R"({"interfaces": [{"name": "eth0"}], "ips": [{"address": "10.0.0.1/8", "interface": 1}]})", "1.0.0",
       "ips[0].interface"},
      {R"({"interfaces": [{"name": "eth0"}], "ips": [{"address": "10.0.0.1/8", "interface": -1}]})", "1.0.0",
       "ips[0].interface"},
      {R"({"interfaces": [{"name": "e0"}], "ips": [{"address": "10.0.0.1/8", "interface": 0.5}]})", "1.0.0",
       "ips[0].interface: expected an integer"},
      {R"({"interfaces": [{"name": "e0"}], "ips": [{"address": "10.0.0.1/8", "interface": "0"}]})", "1.0.0",
       "ips[0].interface"},
      {R"({"interfaces": [{"name": "eth0"}],
           "ips": [{"address": "10.0.0.1/8", "interface": 99999999999999999999}]})",
       "1.0.0", "ips[0].interface"},
      {R"({"ips": [{"version": "6", "address": "10.0.0.1/8"}]})", "0.4.0", "ips[0].version"},
      {R"({"ips": [{"version": 4, "address": "10.0.0.1/8"}]})", "0.3.1", "ips[0].version"},
      {R"({"interfaces": {}})", "1.0.0", "interfaces: expected an array"},
      {R"({"interfaces": ["eth0"]})", "1.0.0", "interfaces[0]"},
      {R"({"interfaces": [{"name": 1}]})", "1.0.0", "interfaces[0].name"},
      {R"({"interfaces": [{"name": "eth0", "mtu": -1}]})", "1.1.0", "interfaces[0].mtu"},
      {R"({"interfaces": [{"name": "eth0", "mtu": "1500"}]})", "1.1.0", "interfaces[0].mtu"},
      {R"({"routes": [{"gw": "10.0.0.1"}]})", "1.0.0", "routes[0].dst: missing"},
      {R"({"routes": [{"dst": "10.0.0.0/8", "gw": "bad"}]})", "1.0.0", "routes[0].gw"},
      {R"({"routes": [{"dst": "::/0", "gw": "10.0.0.1"}]})", "1.0.0", "routes[0].gw"},
      {R"({"routes": [{"dst": "0.0.0.0/0", "scope": 256}]})", "1.1.0", "routes[0].scope"},
      {R"({"routes": [{"dst": "0.0.0.0/0", "table": -5}]})", "1.1.0", "routes[0].table"},
      {R"({"routes": {"dst": "0.0.0.0/0"}})", "1.0.0", "routes: expected an array"},
      {R"({"dns": []})", "1.0.0", "dns: expected an object"},
      {R"({"dns": {"nameservers": "10.0.0.1"}})", "1.0.0", "dns.nameservers"},
      {R"({"dns": {"search": [1]}})", "1.0.0", "dns.search[0]"},
      {R"({"dns": {"domain": ["a"]}})", "1.0.0", "dns.domain"},
      {R"({"ip4": []})", "0.2.0", "ip4: expected an object"},
      {R"({"ip4": {}})", "0.2.0", "ip4.ip: missing"},
      {R"({"ip4": {"ip": "10.0.0.1/40"}})", "0.2.0", "ip4.ip"},
      {R"({"ip4": {"ip": "2001:db8::1/64"}})", "0.2.0", "ip4.ip"},
      {R"({"ip6": {"ip": "2001:db8::1/64", "gateway": "10.0.0.1"}})", "0.1.0", "ip6.gateway"},
      {R"({"ip4": {"ip": "10.0.0.1/8", "routes": [{"dst": "1.2.3.4/33"}]}})", "0.2.0", "ip4.routes[0].dst"},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    const std::string msg = message_of([&] { decode_result_text(c.json, c.fallback); });
    CHECK(code_of([&] { decode_result_text(c.json, c.fallback); }) == 6);
    CHECK_THAT(msg, Catch::Contains(c.mentions));
  }
}

TEST_CASE("hostile result text is error 6", "[cni]") {
  for (std::string bad :
       {std::string(), std::string("{"), std::string("not json"), std::string("{\"ips\": [}"),
        std::string("{\"a\":\"\xff\"}"), std::string(100, '[') + std::string(100, ']'), std::string(5u << 20, ' ')}) {
    INFO(bad.substr(0, 40));
    CHECK(code_of([&] { decode_result_text(bad, "1.0.0"); }) == 6);
  }
  // An embedded NUL inside an address is not silently truncated.
  CHECK(code_of([&] { decode_result_text(R"({"ips":[{"address":"10.0.0.1/8\u0000junk"}]})", "1.0.0"); }) == 6);
  // Offending values are quoted, truncated and escaped in the message.
  const std::string msg = message_of(
      [&] { decode_result_text(R"({"ips":[{"address":"\u0001)" + std::string(500, 'x') + R"("}]})", "1.0.0"); });
  CHECK_THAT(msg, Catch::Contains("\\x01"));
  CHECK(msg.size() < 200);
}

TEST_CASE("unknown keys are ignored and the 1.1 fields read leniently", "[cni]") {
  const Result r = decode_text(R"({"cniVersion": "1.0.0", "extra": {"x": 1},
      "interfaces": [{"name": "eth0", "mtu": 1400, "metadata": {"k": "v"}}],
      "ips": [{"interface": 0, "address": "10.0.0.1/8", "version": "ignored in 1.x"}],
      "routes": [{"dst": "0.0.0.0/0", "mtu": 0, "priority": 0, "table": 0}],
      "dns": null})");
  REQUIRE(r.interfaces.size() == 1);
  CHECK(r.interfaces[0].mtu == 1400);
  REQUIRE(r.routes.size() == 1);
  CHECK_FALSE(r.routes[0].mtu.has_value());  // 0 means unset, as libcni's omitempty
  CHECK_FALSE(r.routes[0].priority.has_value());
  CHECK(r.routes[0].table == 0);  // table is a pointer in libcni: 0 is kept
  CHECK(r.dns.empty());
  // The 1.0.0 encoding drops the 1.1 interface mtu.
  CHECK(encode_result(r, "1.0.0")["interfaces"][0].dump() == R"({"name":"eth0"})");
}

TEST_CASE("encoding a model decode_result could not produce is an internal error", "[cni]") {
  Result r;
  r.ips = {IpConfig{std::nullopt, "not-an-address", ""}};
  CHECK(code_of([&] { encode_result(r, "1.0.0"); }) == 100);
  r.ips = {IpConfig{2, "10.0.0.1/8", ""}};
  CHECK(code_of([&] { encode_result(r, "0.4.0"); }) == 100);
  r.ips = {IpConfig{std::nullopt, "10.0.0.1/8", "gw"}};
  CHECK(code_of([&] { encode_result(r, "0.2.0"); }) == 100);
  r.ips = {IpConfig{std::nullopt, "10.0.0.1/8", ""}};
  r.routes = {Route{"10.0.0.0", "", {}, {}, {}, {}, {}}};
  CHECK(code_of([&] { encode_result(r, "1.1.0"); }) == 100);
}
