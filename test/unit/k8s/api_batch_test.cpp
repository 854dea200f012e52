// Tests of ApiClient's batches against FakeHttpTransport with a fake clock and sleeper: NADs fetched
// in one batch with one outcome each, only retryable failures sent again (in a smaller batch, after
// the backoff or the longest Retry-After), invalid names failing alone, events behind the status
// PUT sent once and never retried, and a transport that answers a batch short being an internal
// error. Nothing sleeps.
#include <catch2/catch.hpp>

#include "k8s/api_client.h"
#include "k8s/api_harness.h"

using namespace manifold;
using namespace manifold::http;
using namespace manifold::k8s;
using manifold::util::FakeClock;
using manifold::util::FakeSleeper;
using std::chrono::milliseconds;

namespace {

std::string nad_json(const std::string& name) {
  return Json{{"kind", "NetworkAttachmentDefinition"}, {"metadata", {{"name", name}}}}.dump();
}

std::string status_json(int code, const std::string& reason) {
  return Json{{"kind", "Status"}, {"status", "Failure"}, {"reason", reason}, {"code", code}}.dump();
}

/// The shared harness with room for the batches' retries: 4 attempts within 10 s.
struct Harness : testing::ApiHarness {
  Harness() {
    policy.max_attempts = 4;
    policy.total_deadline = milliseconds(10000);
  }
};

/// What the outcome would throw, as a CniError (ApiError is one).
std::optional<cni::CniError> error_of(const ApiOutcome& outcome) {
  if (!outcome.error) return std::nullopt;
  try {
    std::rethrow_exception(outcome.error);
  } catch (const cni::CniError& e) {
    return e;
  }
  return std::nullopt;
}

int http_status_of(const ApiOutcome& outcome) {
  try {
    std::rethrow_exception(outcome.error);
  } catch (const ApiError& e) {
    return e.http_status();
  } catch (...) {}
  return -1;
}

}  // namespace

TEST_CASE("ApiClient fetches several NADs in one batch, one outcome each", "[k8s]") {
  Harness h;
  h.transport.push_response(200, nad_json("a"));
  h.transport.push_response(404, status_json(404, "NotFound"));
  h.transport.push_response(200, nad_json("c"));
  ApiClient client = h.client();
  auto out = client.get_nads({{"default", "a"}, {"default", "b"}, {"other", "c"}});
  REQUIRE(out.size() == 3);
  CHECK(out[0].object["metadata"]["name"] == "a");
  CHECK(http_status_of(out[1]) == 404);
  CHECK(out[2].object["metadata"]["name"] == "c");
  CHECK(h.transport.batches() == std::vector<std::size_t>{3});
  CHECK(h.transport.requests()[2].target ==
        "/apis/k8s.cni.cncf.io/v1/namespaces/other/network-attachment-definitions/c");
  CHECK(h.transport.requests()[1].headers.at(0).second == "Bearer s3cr3t-token");
  CHECK(client.requests_made() == 3);
  CHECK(h.sleeper.waits().empty());
}

TEST_CASE("ApiClient sends again only the calls of a batch whose answer is retryable", "[k8s]") {
  Harness h;
  h.transport.push_response(200, nad_json("a"));
  h.transport.push_response(503, status_json(503, "ServiceUnavailable"), {{"Retry-After", "2"}});
  h.transport.push_error(TransportError(TransportError::Kind::Closed, "connection closed"));
  h.transport.push_response(429, status_json(429, "TooManyRequests"), {{"Retry-After", "1"}});
  // Second attempt: b, c and d only, in their order.
  h.transport.push_response(200, nad_json("b"));
  h.transport.push_response(200, nad_json("c"));
  h.transport.push_response(200, nad_json("d"));
  ApiClient client = h.client();
  auto out = client.get_nads({{"ns", "a"}, {"ns", "b"}, {"ns", "c"}, {"ns", "d"}});
  CHECK(h.transport.batches() == std::vector<std::size_t>{4, 3});
  for (const auto& o : out) CHECK_FALSE(o.error);
  CHECK(h.transport.requests()[4].target == "/apis/k8s.cni.cncf.io/v1/namespaces/ns/network-attachment-definitions/b");
  CHECK(out[0].object["metadata"]["name"] == "a");
  CHECK(out[1].object["metadata"]["name"] == "b");
  CHECK(out[2].object["metadata"]["name"] == "c");
  CHECK(out[3].object["metadata"]["name"] == "d");
  // One wait, as long as the longest Retry-After of the batch.
  REQUIRE(h.sleeper.waits().size() == 1);
  CHECK(h.sleeper.waits()[0] == milliseconds(2000));
  CHECK(client.requests_made() == 7);
}

TEST_CASE("ApiClient gives every call of a batch still failing its own exhaustion error", "[k8s]") {
  Harness h;
  h.policy.max_attempts = 2;
  for (int attempt = 0; attempt < 2; ++attempt) {
    h.transport.push_response(500, status_json(500, "InternalError"));
    h.transport.push_response(200, nad_json("ok"));
  }
  ApiClient client = h.client();
  auto out = client.get_nads({{"ns", "bad"}, {"ns", "ok"}});
  CHECK(h.transport.batches() == std::vector<std::size_t>{2, 1});
  auto error = error_of(out[0]);
  REQUIRE(error);
  CHECK_THAT(error->msg(), Catch::Contains("still answering 500") &&
                               Catch::Contains("network-attachment-definitions \"bad\"") &&
                               Catch::Contains("(limit of 2 attempts reached)"));
  CHECK_FALSE(out[1].error);
  CHECK(h.transport.pending() == 1);  // the scripted answer of a second "ok" was never asked for
}

TEST_CASE("ApiClient fails an invalid NAD name alone and fetches the others", "[k8s]") {
  Harness h;
  h.transport.push_response(200, nad_json("good"));
  ApiClient client = h.client();
  auto out = client.get_nads({{"ns", "Not_Valid"}, {"ns", "good"}});
  auto error = error_of(out[0]);
  REQUIRE(error);
  CHECK(error->code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
  CHECK(out[1].object["metadata"]["name"] == "good");
  CHECK(h.transport.batches() == std::vector<std::size_t>{1});
}

TEST_CASE("ApiClient decodes each answer of a batch on its own", "[k8s]") {
  Harness h;
  h.transport.push_response(200, "not json");
  h.transport.push_response(200, R"({"kind":"Pod"})");
  h.transport.push_response(200, nad_json("c"));
  ApiClient client = h.client();
  auto out = client.get_nads({{"ns", "a"}, {"ns", "b"}, {"ns", "c"}});
  CHECK_THAT(error_of(out[0])->msg(), Catch::Contains("is not valid JSON"));
  CHECK_THAT(error_of(out[1])->msg(), Catch::Contains("has kind \"Pod\", expected NetworkAttachmentDefinition"));
  CHECK(out[2].object["metadata"]["name"] == "c");
  CHECK(h.transport.batches().size() == 1);
}

TEST_CASE("ApiClient sends events behind the status PUT in one batch, once each", "[k8s]") {
  Harness h;
  h.transport.push_response(200, R"({"kind":"Pod","metadata":{"resourceVersion":"8"}})");
  h.transport.push_response(503, status_json(503, "ServiceUnavailable"));
  h.transport.push_error(TransportError(TransportError::Kind::Closed, "connection closed"));
  h.transport.push_response(201, R"({"kind":"Event"})");
  ApiClient client = h.client();
  Json pod = {{"kind", "Pod"}, {"metadata", {{"name", "p"}, {"resourceVersion", "7"}}}};
  std::vector<Json> events = {
      {{"metadata", {{"name", "p.1"}}}}, {{"metadata", {{"name", "p.2"}}}}, {{"metadata", {{"name", "p.3"}}}}};
  auto out = client.update_pod_status_with_events("default", "p", pod, events);
  REQUIRE(out.size() == 4);
  CHECK(std::move(out[0]).take()["metadata"]["resourceVersion"] == "8");
  CHECK_THAT(error_of(out[1])->msg(), Catch::Contains("still answering 503") && Catch::Contains("events \"p.1\"") &&
                                          Catch::Contains("(sent once, never retried)"));
  CHECK_THAT(error_of(out[2])->msg(), Catch::Contains("unreachable for POST events \"p.2\""));
  CHECK_FALSE(out[3].error);
  CHECK(out[3].object.is_null());  // an event's answer is not decoded
  CHECK(h.transport.batches() == std::vector<std::size_t>{4});
  const auto& sent = h.transport.requests();
  CHECK(sent[0].method == "PUT");
  CHECK(sent[0].target == "/api/v1/namespaces/default/pods/p/status");
  CHECK(sent[1].method == "POST");
  CHECK(sent[3].target == "/api/v1/namespaces/default/events");
  CHECK(h.sleeper.waits().empty());
}

TEST_CASE("ApiClient retries the status PUT of a batch but not its events", "[k8s]") {
  Harness h;
  h.transport.push_response(500, status_json(500, "InternalError"));
  h.transport.push_response(201, R"({"kind":"Event"})");
  h.transport.push_response(200, R"({"kind":"Pod"})");
  ApiClient client = h.client();
  Json pod = {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  auto out = client.update_pod_status_with_events("default", "p", pod, {{{"metadata", {{"name", "p.1"}}}}});
  CHECK_FALSE(out[0].error);
  CHECK_FALSE(out[1].error);
  CHECK(h.transport.batches() == std::vector<std::size_t>{2, 1});
  CHECK(h.transport.requests()[2].method == "PUT");
}

TEST_CASE("ApiClient reports a 409 of the status PUT in its outcome, events still sent", "[k8s]") {
  Harness h;
  h.transport.push_response(409, status_json(409, "Conflict"));
  h.transport.push_response(201, R"({"kind":"Event"})");
  ApiClient client = h.client();
  Json pod = {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  auto out = client.update_pod_status_with_events("default", "p", pod, {{{"metadata", {{"name", "p.1"}}}}});
  CHECK(http_status_of(out[0]) == 409);
  CHECK_FALSE(out[1].error);
  CHECK(h.transport.batches() == std::vector<std::size_t>{2});
}

TEST_CASE("ApiClient creates a batch of events, each sent once", "[k8s]") {
  Harness h;
  h.transport.push_response(201, R"({"kind":"Event"})");
  h.transport.push_response(429, status_json(429, "TooManyRequests"), {{"Retry-After", "5"}});
  ApiClient client = h.client();
  auto out = client.create_events("kube-system", {{{"metadata", {{"name", "e1"}}}}, {{"metadata", {{"name", "e2"}}}}});
  CHECK_FALSE(out[0].error);
  CHECK(http_status_of(out[1]) == 429);
  CHECK(h.transport.batches() == std::vector<std::size_t>{2});
  CHECK(h.sleeper.waits().empty());  // nothing is waited for: no call of the batch is retried
}

namespace {

/// A transport that loses an answer of every batch (a bug this client must not index past).
class ShortTransport final : public HttpTransport {
 public:
  HttpResponse send(const HttpRequest&, milliseconds) override { return HttpResponse{200, {}, "{}"}; }
  std::vector<BatchOutcome> send_batch(const std::vector<HttpRequest>& requests, milliseconds) override {
    return std::vector<BatchOutcome>(requests.size() - 1, HttpResponse{200, {}, "{}"});
  }
};

}  // namespace

TEST_CASE("ApiClient treats a transport answering a batch short as an internal error", "[k8s]") {
  Harness h;
  ShortTransport transport;
  ApiClient client(transport, h.auth, h.policy, h.sleeper, h.clock, h.files, h.jitter);
  try {
    client.get_nads({{"ns", "a"}, {"ns", "b"}});
    FAIL("no error");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Internal));
    CHECK_THAT(e.msg(), Catch::Contains("answered 1 of a batch of 2"));
  }
}

TEST_CASE("HttpTransport's default batch sends one request at a time, failures kept apart", "[k8s]") {
  /// Forwards send() only, so the base class's send_batch is the one under test.
  class SendOnly final : public HttpTransport {
   public:
    HttpResponse send(const HttpRequest& request, milliseconds) override {
      sent.push_back(request.target);
      if (request.target == "/bad") throw TransportError(TransportError::Kind::Timeout, "slow");
      return HttpResponse{200, {}, request.target};
    }
    std::vector<std::string> sent;
  } transport;
  std::vector<HttpRequest> batch = {{"GET", "/a", {}, ""}, {"GET", "/bad", {}, ""}, {"GET", "/c", {}, ""}};
  auto out = transport.send_batch(batch, milliseconds(1000));
  CHECK(transport.sent == std::vector<std::string>{"/a", "/bad", "/c"});
  CHECK(std::get<HttpResponse>(out[0]).body == "/a");
  CHECK(std::get<TransportError>(out[1]).kind() == TransportError::Kind::Timeout);
  CHECK(std::get<HttpResponse>(out[2]).body == "/c");
}
