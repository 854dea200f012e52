// Tests of the transport seam: API server URL parsing and validation, case-insensitive header
// lookup, TransportError classification and the scripted FakeHttpTransport.
#include <catch2/catch.hpp>

#include "k8s/http.h"

using namespace manifold;
using namespace manifold::k8s;
using std::chrono::milliseconds;

namespace {

std::string url_error(const std::string& url) {
  try {
    parse_server_url(url);
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    return e.msg();
  }
  FAIL("parse_server_url accepted " << url);
  return {};
}

}  // namespace

TEST_CASE("parse_server_url accepts names, IPv4, bracketed IPv6, ports and path prefixes", "[k8s]") {
  ServerUrl a = parse_server_url("https://10.96.0.1");
  CHECK(a.host == "10.96.0.1");
  CHECK(a.port == 443);
  CHECK(a.host_is_ip);
  CHECK_FALSE(a.host_is_ipv6);
  CHECK(a.base_path.empty());
  CHECK(a.authority() == "10.96.0.1:443");

  ServerUrl b = parse_server_url("HTTPS://api.cluster.example:6443/");
  CHECK(b.host == "api.cluster.example");
  CHECK(b.port == 6443);
  CHECK_FALSE(b.host_is_ip);
  CHECK(b.base_path.empty());
  CHECK(b.to_string() == "https://api.cluster.example:6443");

  ServerUrl c = parse_server_url("https://[fd00::1]:6443/k8s/clusters/c-1//");
  CHECK(c.host == "fd00::1");
  CHECK(c.host_is_ipv6);
  CHECK(c.port == 6443);
  CHECK(c.base_path == "/k8s/clusters/c-1");
  CHECK(c.authority() == "[fd00::1]:6443");
  CHECK(c.to_string() == "https://[fd00::1]:6443/k8s/clusters/c-1");

  CHECK(parse_server_url("https://[::1]").port == 443);
  CHECK(parse_server_url("https://localhost:1").port == 1);
}

TEST_CASE("parse_server_url rejects everything else with a reason", "[k8s]") {
  CHECK_THAT(url_error(""), Catch::Contains("empty"));
  CHECK_THAT(url_error("http://10.0.0.1"), Catch::Contains("only https:// is supported"));
  CHECK_THAT(url_error("10.0.0.1:6443"), Catch::Contains("must start with https://"));
  CHECK_THAT(url_error("https://"), Catch::Contains("host is missing"));
  CHECK_THAT(url_error("https://:6443"), Catch::Contains("host is missing"));
  CHECK_THAT(url_error("https://10.0.0.1:"), Catch::Contains("port"));
  CHECK_THAT(url_error("https://10.0.0.1:0"), Catch::Contains("port"));
  CHECK_THAT(url_error("https://10.0.0.1:65536"), Catch::Contains("port"));
  CHECK_THAT(url_error("https://10.0.0.1:64x"), Catch::Contains("port"));
  CHECK_THAT(url_error("https://10.0.0.300"), Catch::Contains("not a valid IPv4 address"));
  CHECK_THAT(url_error("https://fd00::1"), Catch::Contains("in brackets"));
  CHECK_THAT(url_error("https://[fd00::1"), Catch::Contains("unterminated"));
  CHECK_THAT(url_error("https://[not-v6]:443"), Catch::Contains("not a valid IPv6 address"));
  CHECK_THAT(url_error("https://[::1]x"), Catch::Contains("after the [IPv6] address"));
  CHECK_THAT(url_error("https://bad_host.example"), Catch::Contains("not a valid host name"));
  CHECK_THAT(url_error("https://-a.example"), Catch::Contains("not a valid host name"));
  CHECK_THAT(url_error("https://a..example"), Catch::Contains("not a valid host name"));
  CHECK_THAT(url_error("https://h.example/p?x=1"), Catch::Contains("query or fragment"));
  CHECK_THAT(url_error("https://h.example/p#f"), Catch::Contains("query or fragment"));
  CHECK_THAT(url_error("https://h.example/a b"), Catch::Contains("whitespace"));
  CHECK_THAT(url_error("https://h.example/a\r\nHost: evil"), Catch::Contains("control"));
  CHECK_THAT(url_error("https://h.example/a\"b"), Catch::Contains("invalid character"));
  CHECK_THAT(url_error("https://" + std::string(3000, 'a')), Catch::Contains("longer than"));
  std::string secret = url_error("https://admin:hunter2@10.0.0.1");
  CHECK_THAT(secret, Catch::Contains("user info"));
  CHECK_THAT(secret, !Catch::Contains("hunter2"));
}

TEST_CASE("HttpResponse::header is case-insensitive and returns the first match", "[k8s]") {
  HttpResponse r{200, {{"Content-Type", "application/json"}, {"retry-after", "3"}, {"Retry-After", "9"}}, ""};
  CHECK(r.header("content-type") == "application/json");
  CHECK(r.header("RETRY-AFTER") == "3");
  CHECK(r.header("X-Missing").empty());
}

TEST_CASE("TransportError kinds decide retryability", "[k8s]") {
  using K = TransportError::Kind;
  for (K k : {K::Resolve, K::Connect, K::Tls, K::Timeout, K::Closed}) CHECK(TransportError(k, "x").retryable());
  for (K k : {K::TlsVerify, K::Protocol, K::TooLarge}) CHECK_FALSE(TransportError(k, "x").retryable());
  TransportError e(K::Timeout, "slow");
  CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Kubernetes));
  CHECK(e.msg() == "slow");
}

TEST_CASE("FakeHttpTransport replays its script and records requests", "[k8s]") {
  FakeHttpTransport fake;
  int hooked = 0;
  fake.on_send([&](const HttpRequest&) { ++hooked; });
  fake.push_response(201, "{}", {{"X-A", "1"}});
  fake.push_error(TransportError(TransportError::Kind::Closed, "reset"));
  HttpResponse r = fake.send(HttpRequest{"POST", "/a", {}, "body"}, milliseconds(5));
  CHECK(r.status == 201);
  CHECK(r.header("x-a") == "1");
  CHECK_THROWS_AS(fake.send(HttpRequest{"GET", "/b", {}, ""}, milliseconds(7)), TransportError);
  CHECK_THROWS_WITH(fake.send(HttpRequest{"GET", "/c", {}, ""}, milliseconds(9)), Catch::Contains("GET /c"));
  REQUIRE(fake.requests().size() == 3);
  CHECK(fake.requests()[0].body == "body");
  CHECK(fake.timeouts() == std::vector<milliseconds>{milliseconds(5), milliseconds(7), milliseconds(9)});
  CHECK(hooked == 3);
  CHECK(fake.pending() == 0);
}
