// Tests for the relay's memory bounds: a request frame's caps (requests, headers, header bytes,
// target length, JSON values), frames read as their bytes arrive and within a shared byte budget,
// and an exchange whose answers would pass the client's frame limit — no further request is sent,
// and the exchange is refused when only GETs went out, or its remaining requests fail retryably
// when a state-changing request did.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <thread>

#include "cni_error_of.h"
#include "relay/relay_exchange.h"
#include "relay/relay_protocol.h"
#include "util/unique_fd.h"

using manifold::http::BatchOutcome;
using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::HttpResponse;
using manifold::http::TransportError;
using manifold::test::code_of;
using manifold::util::UniqueFd;
namespace relay = manifold::relay;
using namespace std::chrono_literals;

namespace {

const std::string kNad = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions/big";

relay::RelayRequest batch(std::size_t n, HttpRequest r = {"GET", kNad, {{"Accept", "application/json"}}, ""}) {
  return {"https://10.0.0.1:6443", 1000ms, std::vector<HttpRequest>(n, r), ""};
}

int decode_code(const std::string& payload) {
  return code_of([&] { relay::decode_request(payload); });
}

}  // namespace

TEST_CASE("relay limits: a request frame is capped at what a CNI call sends", "[relay]") {
  CHECK(relay::decode_request(relay::encode_request(batch(relay::kMaxRequests))).requests.size() ==
        relay::kMaxRequests);
  CHECK(decode_code(relay::encode_request(batch(relay::kMaxRequests + 1))) == 6);

  HttpRequest headers{"GET", kNad, {}, ""};
  for (std::size_t i = 0; i < relay::kMaxHeaders; ++i) headers.headers.emplace_back("X", "y");
  CHECK(relay::decode_request(relay::encode_request(batch(1, headers))).requests[0].headers.size() ==
        relay::kMaxHeaders);
  headers.headers.emplace_back("X", "y");
  CHECK(decode_code(relay::encode_request(batch(1, headers))) == 6);

  HttpRequest long_value{"GET", kNad, {{"User-Agent", std::string(relay::kMaxHeaderBytes, 'a')}}, ""};
  CHECK(decode_code(relay::encode_request(batch(1, long_value))) == 6);
  HttpRequest long_target{"GET", kNad + std::string(relay::kMaxTargetBytes, 'a'), {}, ""};
  CHECK(decode_code(relay::encode_request(batch(1, long_target))) == 6);
}

TEST_CASE("relay limits: a frame of tiny values is refused while it is parsed", "[relay]") {
  // Just under the frame size limit, one request whose "headers" hold a million tiny values: the
  // document it would build is far larger than the frame.
  std::string payload = R"({"v":1,"server":"s","timeoutMs":1000,"requests":[{"method":"GET","target":"/","body":"",)";
  payload += R"("headers":[)";
  while (payload.size() < relay::kMaxRequestFrame - 64) payload += "[\"a\",\"b\"],";
  payload += "[\"a\",\"b\"]]}]}";
  REQUIRE(payload.size() < relay::kMaxRequestFrame);
  try {
    relay::decode_request(payload);
    FAIL("a frame of tiny values was decoded");
  } catch (const manifold::cni::CniError& e) {
    CHECK_THAT(e.msg(), Catch::Contains("values"));
  }
}

TEST_CASE("relay limits: a frame is read as its bytes arrive, within the shared budget", "[relay]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  UniqueFd a(fds[0]), b(fds[1]);
  auto soon = [] { return std::chrono::steady_clock::now() + 5s; };
  relay::ByteBudget budget(256u << 10);
  {
    // A frame that fits the budget is read whole; the bytes are given back with the hold.
    relay::BudgetHold hold(&budget);
    relay::write_frame(a.get(), std::string(100000, 'x'), soon());
    CHECK(relay::read_frame(b.get(), relay::kMaxRequestFrame, soon(), &hold).size() == 100000);
    CHECK(budget.used() >= 100000);
  }
  CHECK(budget.used() == 0);
  // A peer that announces the largest frame and sends a few bytes: the reader holds one chunk, not
  // the announced size, and gives it back when the peer leaves.
  {
    relay::BudgetHold hold(&budget);
    std::uint32_t size = relay::kMaxRequestFrame;
    const char prefix[4] = {static_cast<char>(size >> 24), static_cast<char>(size >> 16), static_cast<char>(size >> 8),
                            static_cast<char>(size)};
    REQUIRE(::send(a.get(), prefix, 4, 0) == 4);
    REQUIRE(::send(a.get(), "abc", 3, 0) == 3);
    ::shutdown(a.get(), SHUT_WR);
    CHECK_THROWS_AS(relay::read_frame(b.get(), relay::kMaxRequestFrame, soon(), &hold), TransportError);
    CHECK(budget.used() <= (64u << 10));
  }
  CHECK(budget.used() == 0);
  // A frame larger than what is left of the budget is refused as too large.
  int more[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, more) == 0);
  UniqueFd c(more[0]), d(more[1]);
  REQUIRE(budget.take(200u << 10));
  std::thread writer([&] {
    try {
      relay::write_frame(c.get(), std::string(300000, 'y'), soon());
    } catch (const TransportError&) {}
  });
  relay::BudgetHold hold(&budget);
  try {
    relay::read_frame(d.get(), relay::kMaxRequestFrame, soon(), &hold);
    FAIL("a frame past the budget was read");
  } catch (const TransportError& e) {
    CHECK(e.kind() == TransportError::Kind::TooLarge);
  }
  d.reset();
  writer.join();
}

TEST_CASE("relay limits: GETs whose answers would not fit are refused, and no more are sent", "[relay]") {
  FakeHttpTransport upstream;
  const std::string big(512u << 10, 'n');
  for (int i = 0; i < 64; ++i) upstream.push_response(200, big);
  relay::BudgetHold hold(nullptr);
  relay::ExchangeResult result = relay::run_exchange(upstream, batch(64).requests, 1000ms, 8, hold, {});
  CHECK(result.payload.empty());
  CHECK_THAT(result.refused, Catch::Contains("answer frame"));
  CHECK(upstream.requests().size() < 64);
  CHECK(upstream.requests().size() * big.size() <= relay::kMaxAnswerFrame + 8 * big.size());

  // A shared budget that is spent refuses even a small exchange of GETs.
  relay::ByteBudget budget(1000);
  relay::BudgetHold small(&budget);
  FakeHttpTransport one;
  one.push_response(200, std::string(2000, 'z'));
  CHECK_FALSE(relay::run_exchange(one, batch(1).requests, 1000ms, 8, small, {}).refused.empty());
}

TEST_CASE("relay limits: after a state-changing request, the rest fail retryably instead", "[relay]") {
  FakeHttpTransport upstream;
  const std::string big(512u << 10, 'n');
  for (int i = 0; i < 64; ++i) upstream.push_response(200, big);
  std::vector<HttpRequest> requests = batch(64).requests;
  requests[0] = {"PUT", "/api/v1/namespaces/default/pods/p/status", {}, "{}"};
  relay::BudgetHold hold(nullptr);
  relay::ExchangeResult result = relay::run_exchange(upstream, requests, 1000ms, 8, hold, {});
  REQUIRE(result.refused.empty());
  CHECK(result.payload.size() <= relay::kMaxAnswerFrame);
  CHECK(upstream.requests().size() < 64);
  relay::RelayAnswer answer = relay::decode_answer(result.payload, 64);
  REQUIRE(answer.outcomes.size() == 64);
  CHECK(std::get<HttpResponse>(answer.outcomes[0]).status == 200);
  const auto& last = std::get<TransportError>(answer.outcomes[63]);
  CHECK(last.retryable());
  CHECK_THAT(last.msg(), Catch::Contains("not sent"));
}

TEST_CASE("relay limits: an answer check refuses a GET-only exchange", "[relay]") {
  FakeHttpTransport upstream;
  upstream.push_response(200, "{}");
  relay::BudgetHold hold(nullptr);
  auto result = relay::run_exchange(upstream, batch(1).requests, 1000ms, 8, hold,
                                    [](const HttpRequest&, const BatchOutcome&) { return std::string("not here"); });
  CHECK(result.refused == "not here");
}

TEST_CASE("relay limits: requests in flight of all exchanges together are capped", "[relay]") {
  relay::InFlight in_flight(8);
  REQUIRE(in_flight.take(8, std::chrono::steady_clock::now()));
  CHECK_FALSE(in_flight.take(1, std::chrono::steady_clock::now()));
  FakeHttpTransport upstream;
  relay::BudgetHold hold(nullptr);
  // Every slot taken by other exchanges: nothing is sent, and GETs alone are refused.
  auto result = relay::run_exchange(upstream, batch(2).requests, 50ms, 8, hold, {}, &in_flight);
  CHECK_THAT(result.refused, Catch::Contains("in flight"));
  CHECK(upstream.requests().empty());
  in_flight.give(8);
  upstream.push_response(200, "{}");
  upstream.push_response(200, "{}");
  result = relay::run_exchange(upstream, batch(2).requests, 1000ms, 8, hold, {}, &in_flight);
  CHECK(result.refused.empty());
  CHECK(in_flight.take(8, std::chrono::steady_clock::now()));  // every slot given back
}
