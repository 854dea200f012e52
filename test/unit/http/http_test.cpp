// Tests of the transport seam: API server URL parsing and validation, case-insensitive header
// lookup, TransportError classification, the scripted FakeHttpTransport (plain and streamed
// answers), and the refusal to stream of a transport that does not implement it.
#include <catch2/catch.hpp>

#include "http/http.h"

using namespace manifold;
using namespace manifold::http;
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

TEST_CASE("parse_server_url accepts names, IPv4, bracketed IPv6, ports and path prefixes", "[http]") {
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

TEST_CASE("parse_server_url rejects everything else with a reason", "[http]") {
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

TEST_CASE("HttpResponse::header is case-insensitive and returns the first match", "[http]") {
  HttpResponse r{200, {{"Content-Type", "application/json"}, {"retry-after", "3"}, {"Retry-After", "9"}}, ""};
  CHECK(r.header("content-type") == "application/json");
  CHECK(r.header("RETRY-AFTER") == "3");
  CHECK(r.header("X-Missing").empty());
}

TEST_CASE("TransportError kinds decide retryability", "[http]") {
  using K = TransportError::Kind;
  for (K k : {K::Resolve, K::Connect, K::Tls, K::Timeout, K::Closed}) CHECK(TransportError(k, "x").retryable());
  for (K k : {K::TlsVerify, K::Protocol, K::TooLarge}) CHECK_FALSE(TransportError(k, "x").retryable());
  TransportError e(K::Timeout, "slow");
  CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Kubernetes));
  CHECK(e.msg() == "slow");
}

TEST_CASE("FakeHttpTransport replays its script and records requests", "[http]") {
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

namespace {

/// What a stream() call handed to its hooks.
struct Seen {
  std::vector<std::string> pieces;
  int ticks = 0;
};

StreamResult stream_into(FakeHttpTransport& fake, Seen& seen, const std::string& target, int stop_after_pieces = -1,
                         int stop_at_tick = -1) {
  StreamOptions options;
  options.open_timeout = milliseconds(3);
  options.on_tick = [&] { return ++seen.ticks != stop_at_tick; };
  return fake.stream(HttpRequest{"GET", target, {}, ""}, options, [&](std::string_view piece) {
    seen.pieces.emplace_back(piece);
    return static_cast<int>(seen.pieces.size()) != stop_after_pieces;
  });
}

}  // namespace

TEST_CASE("FakeHttpTransport plays a scripted stream piece by piece", "[http]") {
  FakeHttpTransport fake;
  int hooked = 0;
  fake.on_send([&](const HttpRequest&) { ++hooked; });
  fake.push_stream(200, {"{\"type\":", "\"ADDED\"}\n", ""}, std::nullopt, {{"Content-Type", "application/json"}});
  Seen seen;
  StreamResult result = stream_into(fake, seen, "/api/v1/pods?watch=1");
  CHECK(result.end == StreamEnd::Completed);
  CHECK(result.head.status == 200);
  CHECK(result.head.header("content-type") == "application/json");
  CHECK(result.head.body.empty());
  CHECK(seen.pieces == std::vector<std::string>{"{\"type\":", "\"ADDED\"}\n", ""});
  CHECK(seen.ticks == 3);  // once before each piece
  REQUIRE(fake.requests().size() == 1);
  CHECK(fake.requests()[0].target == "/api/v1/pods?watch=1");
  CHECK(fake.timeouts() == std::vector<milliseconds>{milliseconds(3)});
  CHECK(hooked == 1);
  CHECK(fake.pending() == 0);
}

TEST_CASE("FakeHttpTransport stops a stream when on_data or on_tick returns false", "[http]") {
  FakeHttpTransport fake;
  fake.push_stream(200, {"a", "b", "c"}, TransportError(TransportError::Kind::Closed, "never reached"));
  fake.push_stream(200, {"a", "b", "c"});
  Seen by_data;
  CHECK(stream_into(fake, by_data, "/w", 2).end == StreamEnd::Stopped);
  CHECK(by_data.pieces == std::vector<std::string>{"a", "b"});
  Seen by_tick;
  CHECK(stream_into(fake, by_tick, "/w", -1, 2).end == StreamEnd::Stopped);
  CHECK(by_tick.pieces == std::vector<std::string>{"a"});
  CHECK(by_tick.ticks == 2);
}

TEST_CASE("FakeHttpTransport throws a stream's end error after its pieces", "[http]") {
  FakeHttpTransport fake;
  fake.push_stream(200, {"a", "b"}, TransportError(TransportError::Kind::Timeout, "sent nothing for 60000 ms"));
  Seen seen;
  try {
    stream_into(fake, seen, "/w");
    FAIL("stream() did not throw");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::Timeout);
    CHECK(e.msg() == "sent nothing for 60000 ms");
  }
  CHECK(seen.pieces == std::vector<std::string>{"a", "b"});
}

TEST_CASE("FakeHttpTransport joins a non-2xx stream's pieces into the body", "[http]") {
  FakeHttpTransport fake;
  fake.push_stream(410, {R"({"kind":"Status",)", R"("code":410})"});
  Seen seen;
  StreamResult result = stream_into(fake, seen, "/w");
  CHECK(result.end == StreamEnd::Completed);
  CHECK(result.head.status == 410);
  CHECK(result.head.body == R"({"kind":"Status","code":410})");
  CHECK(seen.pieces.empty());
  CHECK(seen.ticks == 0);
}

TEST_CASE("FakeHttpTransport keeps send and stream answers in one ordered script", "[http]") {
  FakeHttpTransport fake;
  fake.push_response(200, R"({"items":[]})");
  fake.push_stream(200, {"x\n"});
  fake.push_response(200, "as one piece");
  fake.push_error(TransportError(TransportError::Kind::Connect, "refused"));
  fake.push_stream(200, {"y"});
  CHECK(fake.send(HttpRequest{"GET", "/list", {}, ""}, milliseconds(1)).body == R"({"items":[]})");
  Seen first;
  CHECK(stream_into(fake, first, "/watch").end == StreamEnd::Completed);
  CHECK(first.pieces == std::vector<std::string>{"x\n"});
  Seen second;
  CHECK(stream_into(fake, second, "/watch").end == StreamEnd::Completed);
  CHECK(second.pieces == std::vector<std::string>{"as one piece"});
  Seen third;
  CHECK_THROWS_AS(stream_into(fake, third, "/watch"), TransportError);
  // send() meeting a stream answer is a bug in the test's script.
  try {
    fake.send(HttpRequest{"GET", "/get", {}, ""}, milliseconds(1));
    FAIL("send() accepted a stream answer");
  } catch (const TransportError&) {
    FAIL("expected an internal error");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Internal));
    CHECK_THAT(e.msg(), Catch::Contains("GET /get"));
  }
  Seen none;
  CHECK_THROWS_WITH(stream_into(fake, none, "/late"), Catch::Contains("no scripted answer for GET /late"));
  REQUIRE(fake.requests().size() == 6);
  CHECK(fake.requests()[1].target == "/watch");
  CHECK(fake.pending() == 0);
}

TEST_CASE("A transport that only sends refuses to stream", "[http]") {
  struct SendOnly final : HttpTransport {
    HttpResponse send(const HttpRequest&, milliseconds) override { return {}; }
  } transport;
  try {
    transport.stream(HttpRequest{"GET", "/w", {}, ""}, StreamOptions{}, [](std::string_view) { return true; });
    FAIL("stream() did not throw");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Internal));
    CHECK_THAT(e.msg(), Catch::Contains("cannot stream") && Catch::Contains("GET /w"));
  }
}
