// Tests for the relay's answers from memory and the request frame's podUid: the field round-trips,
// is optional (a frame without it, or with a field this version does not know, is still a request),
// and is bounded; a real RelayServer with LocalAnswers answers an exchange of lookups without any
// upstream request when they answer it, and sends it upstream as before when they decline.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <mutex>

#include "cni_error_of.h"
#include "forward_transport.h"
#include "relay/relay_protocol.h"
#include "relay/relay_server.h"
#include "relay/relay_transport.h"
#include "temp_dir.h"

using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::HttpResponse;
using manifold::http::HttpTransport;
namespace relay = manifold::relay;
using namespace std::chrono_literals;

namespace {

constexpr const char* kServer = "https://10.0.0.1:6443";
const std::string kPod = "/api/v1/namespaces/default/pods/web-0";

struct Counts final : relay::RelayCounters {
  std::atomic<int> answered_n{0};
  void answered() override { ++answered_n; }
  void refused() override {}
};

/// Answers a pod GET for UID "uid-1" from memory; declines anything else. Remembers what it saw.
struct Memory final : relay::LocalAnswers {
  std::mutex mu;
  std::vector<std::string> uids;
  std::optional<std::vector<HttpResponse>> answer(const std::vector<HttpRequest>& requests, const std::string& pod_uid,
                                                  std::chrono::steady_clock::time_point) override {
    std::lock_guard lock(mu);
    uids.push_back(pod_uid);
    if (pod_uid != "uid-1" || requests.size() != 1 || requests[0].target != kPod) return std::nullopt;
    return std::vector<HttpResponse>{{200, {{"Content-Type", "application/json"}}, "{\"from\":\"memory\"}"}};
  }
  void upstream_answer(const HttpRequest& request, const manifold::http::BatchOutcome&) override {
    std::lock_guard lock(mu);
    seen_upstream.push_back(request.target);
  }
  std::vector<std::string> seen_upstream;
};

struct AllowAll final : relay::RelayScope {
  std::string authorize(const std::vector<HttpRequest>&, HttpTransport&, const std::string&, std::chrono::milliseconds,
                        bool& check_answers) override {
    check_answers = false;
    return "";
  }
  std::string check_answer(const HttpRequest&, const manifold::http::BatchOutcome&) override { return ""; }
};

}  // namespace

TEST_CASE("relay protocol: podUid is optional, round-trips and is bounded", "[relay]") {
  relay::RelayRequest request{kServer, 1000ms, {{"GET", kPod, {}, ""}}, "uid-1"};
  CHECK(relay::decode_request(relay::encode_request(request)).pod_uid == "uid-1");
  request.pod_uid.clear();
  std::string without = relay::encode_request(request);
  CHECK(without.find("podUid") == std::string::npos);  // an older agent sees the frame it knows
  CHECK(relay::decode_request(without).pod_uid.empty());
  const std::string base = R"({"v":1,"server":"x","timeoutMs":10,"requests":[{"method":"GET","target":"/",)"
                           R"("headers":[],"body":""}])";
  CHECK(relay::decode_request(base + R"(,"someFutureField":true})").requests.size() == 1);
  CHECK(manifold::test::code_of([&] { relay::decode_request(base + R"(,"podUid":7})"); }) == 6);
  CHECK(manifold::test::code_of(
            [&] { relay::decode_request(base + R"(,"podUid":")" + std::string(200, 'u') + "\"}"); }) == 6);
}

TEST_CASE("relay: an exchange of lookups is answered from memory, anything else goes upstream", "[relay]") {
  manifold::test::TempDir dir;
  const std::string socket = dir.str() + "/agent.sock";
  FakeHttpTransport upstream;
  Counts counts;
  auto memory = std::make_shared<Memory>();
  relay::RelayServerOptions options;
  options.socket_path = socket;
  options.server = kServer;
  options.allowed_uid = ::getuid();
  options.scope = std::make_shared<AllowAll>();
  options.answers = memory;
  relay::RelayServer server(
      options,
      [&] {
        return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<FakeHttpTransport>>(upstream));
      },
      [] { return std::string("Bearer agent"); }, counts);
  auto client = [&](const std::string& uid) {
    return relay::RelayTransport(
        socket, kServer, [] { return std::unique_ptr<HttpTransport>(std::make_unique<FakeHttpTransport>()); },
        std::make_shared<relay::OwnerTrust>(::getuid()), uid);
  };
  auto served = client("uid-1");
  CHECK(served.send({"GET", kPod, {}, ""}, 2s).body == "{\"from\":\"memory\"}");
  CHECK(upstream.requests().empty());
  upstream.push_response(200, "{\"from\":\"upstream\"}");
  auto other = client("uid-2");
  CHECK(other.send({"GET", kPod, {}, ""}, 2s).body == "{\"from\":\"upstream\"}");
  CHECK(upstream.requests().size() == 1);
  CHECK(counts.answered_n == 2);
  CHECK(memory->uids == std::vector<std::string>{"uid-1", "uid-2"});
  CHECK(memory->seen_upstream == std::vector<std::string>{kPod});  // what came back from upstream
  CHECK(served.relayed_batches() == 1);
}
