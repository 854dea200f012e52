// Tests for whom the relay acts for and whom the CNI side trusts: the scope of each relayed call,
// NodeScope's rule (a pod of this node, proved by the API server's answer and then remembered; a
// namespace with a pod here; slices of this node only), a real RelayServer refusing a pod of another
// node (counted as refused, the client going directly), and OwnerTrust (socket owner and mode, the
// peer's uid) with a client that never sends to an untrusted socket.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <cstring>

#include "forward_transport.h"
#include "relay/relay_scope.h"
#include "relay/relay_server.h"
#include "relay/relay_transport.h"
#include "relay/relay_trust.h"
#include "temp_dir.h"
#include "util/unique_fd.h"

using manifold::http::BatchOutcome;
using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::HttpResponse;
using manifold::http::HttpTransport;
using manifold::relay::NodeScope;
using manifold::relay::RequestScope;
using manifold::test::TempDir;
using manifold::util::UniqueFd;
namespace relay = manifold::relay;
using namespace std::chrono_literals;

namespace {

const std::string kPod = "/api/v1/namespaces/default/pods/web-0";
const std::string kNad = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions/data";
const std::string kPodHere = R"({"kind":"Pod","spec":{"nodeName":"node-a","containers":[]}})";
const std::string kPodThere = R"({"kind":"Pod","spec":{"nodeName":"node-b"}})";

HttpRequest get(const std::string& target) { return {"GET", target, {}, ""}; }
HttpRequest put_status(const std::string& pod) { return {"PUT", pod + "/status", {}, "{}"}; }
HttpRequest event(const std::string& ns, const std::string& pod_ns, const std::string& pod) {
  return {
      "POST",
      "/api/v1/namespaces/" + ns + "/events",
      {},
      R"({"kind":"Event","involvedObject":{"kind":"Pod","namespace":")" + pod_ns + R"(","name":")" + pod + R"("}})"};
}

std::string authorize(NodeScope& scope, FakeHttpTransport& upstream, const std::vector<HttpRequest>& requests,
                      bool* check = nullptr) {
  bool check_answers = false;
  std::string why = scope.authorize(requests, upstream, "Bearer t", 1000ms, check_answers);
  if (check) *check = check_answers;
  return why;
}

}  // namespace

TEST_CASE("relay scope: what each relayed call is about", "[relay]") {
  std::string why;
  auto pod = relay::scope_of(get(kPod), "", "node-a", why);
  REQUIRE(pod);
  CHECK((pod->kind == RequestScope::Kind::Pod && pod->ns == "default" && pod->name == "web-0"));
  auto status = relay::scope_of(put_status("/k8s" + kPod), "/k8s", "node-a", why);
  REQUIRE(status);
  CHECK((status->kind == RequestScope::Kind::Pod && status->name == "web-0"));
  auto ev = relay::scope_of(event("default", "default", "web-0"), "", "node-a", why);
  REQUIRE(ev);
  CHECK((ev->kind == RequestScope::Kind::Pod && ev->name == "web-0"));
  CHECK_FALSE(relay::scope_of(event("default", "other", "web-0"), "", "node-a", why));
  CHECK_FALSE(
      relay::scope_of({"POST", "/api/v1/namespaces/default/events", {}, "{\"kind\":\"Event\"}"}, "", "node-a", why));
  auto nad = relay::scope_of(get(kNad), "", "node-a", why);
  REQUIRE(nad);
  CHECK((nad->kind == RequestScope::Kind::Namespace && nad->ns == "default"));
  auto claim = relay::scope_of(get("/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/c"), "", "node-a", why);
  REQUIRE(claim);
  CHECK((claim->kind == RequestScope::Kind::Namespace && claim->ns == "ns1"));
  const std::string slices = "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D";
  CHECK(relay::scope_of(get(slices + "node-a%2Cspec.driver%3Dd"), "", "node-a", why));
  CHECK_FALSE(relay::scope_of(get(slices + "node-b%2Cspec.driver%3Dd"), "", "node-a", why));
  CHECK_FALSE(relay::scope_of(get(slices + "node-ab"), "", "node-a", why));
  CHECK_FALSE(
      relay::scope_of(get("/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dd"), "", "node-a", why));
  CHECK(relay::pod_node_name(kPodHere) == "node-a");
  CHECK(relay::pod_node_name(R"({"spec":{"nodeName":["x"]}})").empty());
  CHECK(relay::pod_node_name("not json").empty());
}

TEST_CASE("relay scope: a pod GET proves its pod from its own answer", "[relay]") {
  NodeScope scope("node-a", "");
  FakeHttpTransport upstream;
  bool check = false;
  CHECK(authorize(scope, upstream, {get(kPod)}, &check).empty());
  CHECK(check);
  CHECK(upstream.requests().empty());  // no request of its own
  CHECK_FALSE(scope.check_answer(get(kPod), HttpResponse{200, {}, kPodThere}).empty());
  CHECK_FALSE(scope.check_answer(get(kPod), HttpResponse{404, {}, "{}"}).empty());
  CHECK(scope.check_answer(get(kPod), HttpResponse{200, {}, kPodHere}).empty());
  // Remembered: the pod's status PUT, its events and its namespace's NADs need no request.
  CHECK(authorize(scope, upstream, {put_status(kPod), event("default", "default", "web-0")}, &check).empty());
  CHECK_FALSE(check);
  CHECK(authorize(scope, upstream, {get(kNad), get(kNad)}).empty());
  CHECK(upstream.requests().empty());
}

TEST_CASE("relay scope: what is not remembered is asked, and another node's pod is refused", "[relay]") {
  NodeScope scope("node-a", "");
  FakeHttpTransport upstream;
  upstream.push_response(200, kPodThere);
  CHECK_THAT(authorize(scope, upstream, {put_status(kPod)}), Catch::Contains("pods of its node"));
  REQUIRE(upstream.requests().size() == 1);
  CHECK(upstream.requests()[0].target == kPod);
  CHECK(upstream.requests()[0].method == "GET");
  upstream.push_response(200, kPodHere);
  CHECK(authorize(scope, upstream, {put_status(kPod)}).empty());
  // A namespace without a pod here (the server's list is empty) is refused; with one, served.
  upstream.push_response(200, R"({"kind":"PodList","items":[]})");
  CHECK_FALSE(authorize(scope, upstream,
                        {get("/apis/k8s.cni.cncf.io/v1/namespaces/far/"
                             "network-attachment-definitions/n")})
                  .empty());
  CHECK_THAT(upstream.requests().back().target, Catch::Contains("/api/v1/namespaces/far/pods?fieldSelector="));
  upstream.push_response(200, R"({"kind":"PodList","items":[{"spec":{"nodeName":"node-a"}}]})");
  CHECK(authorize(scope, upstream, {get("/apis/resource.k8s.io/v1/namespaces/near/resourceclaims/c")}).empty());
  // A node name of "" serves nothing; an exchange about too many pods is refused.
  NodeScope nowhere("", "");
  CHECK_FALSE(authorize(nowhere, upstream, {get(kPod)}).empty());
  std::vector<HttpRequest> many;
  for (std::size_t i = 0; i <= NodeScope::kMaxNamed; ++i) many.push_back(put_status(kPod + std::to_string(i)));
  CHECK_THAT(authorize(scope, upstream, many), Catch::Contains("more than"));
}

TEST_CASE("relay trust: the socket's owner and mode, the peer's uid", "[relay]") {
  TempDir dir;
  std::string path = dir.str() + "/agent.sock";
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  relay::OwnerTrust mine(::getuid());
  relay::OwnerTrust other(::getuid() + 1);
  CHECK(mine.check_socket(path).empty());
  CHECK_THAT(other.check_socket(path), Catch::Contains("owned by uid"));
  REQUIRE(::chmod(path.c_str(), 0620) == 0);
  CHECK_THAT(mine.check_socket(path), Catch::Contains("writable"));
  CHECK(mine.check_socket(dir.str() + "/none").empty());  // nothing there: connecting fails instead
  CHECK_THAT(mine.check_socket(dir.str()), Catch::Contains("not a socket"));
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  UniqueFd a(fds[0]), b(fds[1]);
  CHECK(mine.check_peer(a.get()).empty());
  CHECK_THAT(other.check_peer(a.get()), Catch::Contains("runs as uid"));
}

namespace {

struct Counts final : relay::RelayCounters {
  std::atomic<int> answered_n{0}, refused_n{0};
  void answered() override { ++answered_n; }
  void refused() override { ++refused_n; }
};

}  // namespace

TEST_CASE("relay scope and trust: a real relay and client", "[relay]") {
  TempDir dir;
  Counts counts;
  FakeHttpTransport upstream, direct;
  relay::RelayServerOptions options;
  options.socket_path = dir.str() + "/agent.sock";
  options.server = "https://10.0.0.1:6443";
  options.allowed_uid = ::getuid();
  options.node_name = "node-a";
  relay::RelayServer server(
      options,
      [&] {
        return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<FakeHttpTransport>>(upstream));
      },
      [] { return std::string("Bearer agent"); }, counts);
  auto open_direct = [&] {
    return std::unique_ptr<HttpTransport>(std::make_unique<manifold::test::Forward<FakeHttpTransport>>(direct));
  };
  // A pod of another node: the relay refuses after its GET, the client asks directly.
  upstream.push_response(200, kPodThere);
  direct.push_response(200, kPodThere);
  relay::RelayTransport client(options.socket_path, options.server, open_direct,
                               std::make_shared<relay::OwnerTrust>(::getuid()));
  CHECK(client.send(get(kPod), 3s).body == kPodThere);
  CHECK(client.went_direct());
  CHECK(counts.refused_n == 1);
  // The node's own pod is answered.
  upstream.push_response(200, kPodHere);
  relay::RelayTransport again(options.socket_path, options.server, open_direct,
                              std::make_shared<relay::OwnerTrust>(::getuid()));
  CHECK(again.send(get(kPod), 3s).body == kPodHere);
  CHECK_FALSE(again.went_direct());
  CHECK(counts.answered_n == 1);
  // A client that does not trust the socket's owner sends it nothing.
  direct.push_response(200, "{}");
  relay::RelayTransport wary(options.socket_path, options.server, open_direct,
                             std::make_shared<relay::OwnerTrust>(::getuid() + 1));
  CHECK(wary.send(get(kPod), 3s).status == 200);
  CHECK(wary.went_direct());
  CHECK(counts.answered_n + counts.refused_n == 2);
  CHECK(upstream.requests().size() == 2);
}
