// Tests of ApiClient against FakeHttpTransport with a fake clock and sleeper: request paths and
// headers, retries (429 + Retry-After, 5xx, connection errors), what is not retried (404, 409,
// certificate errors), deadline and attempt-limit exhaustion, request counting, token handling,
// Status parsing, name validation and response decoding. Nothing sleeps.
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

const char* kPodJson =
    R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"default","resourceVersion":"42"}})";

std::string status_json(int code, const std::string& reason, const std::string& message) {
  Json s = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
            {"message", message}, {"reason", reason},   {"code", code}};
  return s.dump();
}

using Harness = testing::ApiHarness;

ApiError api_error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& e) {
    return e;
  }
  FAIL("no ApiError thrown");
  return ApiError(0, "", "", "");
}

cni::CniError cni_error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& e) {
    FAIL("unexpected ApiError: " << e.msg());
  } catch (const cni::CniError& e) {
    return e;
  }
  FAIL("no CniError thrown");
  return cni::CniError(cni::ErrorCode::Internal, "");
}

}  // namespace

TEST_CASE("ApiClient GETs a pod with the expected path and headers", "[k8s]") {
  Harness h;
  h.transport.push_response(200, kPodJson);
  ApiClient client = h.client();
  Json pod = client.get_pod("default", "web-1");
  CHECK(pod["metadata"]["resourceVersion"] == "42");
  CHECK(client.requests_made() == 1);
  REQUIRE(h.transport.requests().size() == 1);
  const HttpRequest& r = h.transport.requests()[0];
  CHECK(r.method == "GET");
  CHECK(r.target == "/api/v1/namespaces/default/pods/web-1");
  CHECK(r.body.empty());
  HttpResponse headers_view{0, r.headers, ""};
  CHECK(headers_view.header("Authorization") == "Bearer s3cr3t-token");
  CHECK(headers_view.header("accept") == "application/json");
  CHECK(headers_view.header("User-Agent") == std::string("manifold/") + MANIFOLD_VERSION);
  CHECK(headers_view.header("Content-Type").empty());
  CHECK(h.transport.timeouts()[0] == milliseconds(1000));
  CHECK(h.sleeper.waits().empty());
}

TEST_CASE("ApiClient GETs a NetworkAttachmentDefinition", "[k8s]") {
  Harness h;
  h.transport.push_response(200, R"({"kind":"NetworkAttachmentDefinition","spec":{"config":""}})");
  Json nad = h.client().get_nad("net-ns", "macvlan.conf-1");
  CHECK(nad["spec"]["config"] == "");
  CHECK(h.transport.requests()[0].target ==
        "/apis/k8s.cni.cncf.io/v1/namespaces/net-ns/network-attachment-definitions/macvlan.conf-1");
}

TEST_CASE("ApiClient PUTs pod status and POSTs events with JSON bodies", "[k8s]") {
  Harness h;
  h.transport.push_response(200, kPodJson);
  h.transport.push_response(201, R"({"kind":"Event"})");
  ApiClient client = h.client();
  Json pod = Json::parse(kPodJson);
  pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/network-status"] = "[]";
  Json updated = client.update_pod_status("default", "web-1", pod);
  CHECK(updated["kind"] == "Pod");
  Json event = {{"metadata", {{"name", "web-1.17a"}, {"namespace", "default"}}}, {"reason", "AddedInterface"}};
  client.create_event("default", event);

  REQUIRE(h.transport.requests().size() == 2);
  const HttpRequest& put = h.transport.requests()[0];
  CHECK(put.method == "PUT");
  CHECK(put.target == "/api/v1/namespaces/default/pods/web-1/status");
  CHECK(put.body == pod.dump());
  CHECK(HttpResponse{0, put.headers, ""}.header("Content-Type") == "application/json");
  const HttpRequest& post = h.transport.requests()[1];
  CHECK(post.method == "POST");
  CHECK(post.target == "/api/v1/namespaces/default/events");
  CHECK(Json::parse(post.body) == event);
  CHECK(client.requests_made() == 2);
}

TEST_CASE("ApiClient prefixes paths with the server URL's path", "[k8s]") {
  Harness h;
  h.auth.server = "https://rancher.example/k8s/clusters/c-abc12/";
  h.transport.push_response(200, kPodJson);
  h.client().get_pod("default", "web-1");
  CHECK(h.transport.requests()[0].target == "/k8s/clusters/c-abc12/api/v1/namespaces/default/pods/web-1");
}

TEST_CASE("ApiClient honours Retry-After on 429", "[k8s]") {
  Harness h;
  h.transport.push_response(429, status_json(429, "TooManyRequests", "slow down"), {{"Retry-After", "2"}});
  h.transport.push_response(200, kPodJson);
  ApiClient client = h.client();
  CHECK(client.get_pod("default", "web-1")["kind"] == "Pod");
  CHECK(h.sleeper.waits() == std::vector<milliseconds>{milliseconds(2000)});
  CHECK(client.requests_made() == 2);
  CHECK(h.transport.timeouts()[1] == milliseconds(1000));
}

TEST_CASE("ApiClient retries 500s with exponential backoff, then succeeds", "[k8s]") {
  Harness h;
  h.policy.total_deadline = milliseconds(30000);
  for (int status : {500, 502, 503, 504}) h.transport.push_response(status, "<html>oops</html>");
  h.transport.push_response(200, kPodJson);
  ApiClient client = h.client();
  CHECK(client.get_pod("default", "web-1")["kind"] == "Pod");
  CHECK(h.sleeper.waits() ==
        std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(400), milliseconds(800)});
  CHECK(client.requests_made() == 5);
  CHECK(h.transport.pending() == 0);
}

TEST_CASE("ApiClient retries connection errors", "[k8s]") {
  Harness h;
  h.transport.push_error(TransportError(TransportError::Kind::Connect, "cannot connect: Connection refused"));
  h.transport.push_error(TransportError(TransportError::Kind::Closed, "connection reset"));
  h.transport.push_error(TransportError(TransportError::Kind::Timeout, "did not answer within 1000 ms"));
  h.transport.push_response(200, kPodJson);
  ApiClient client = h.client();
  CHECK(client.get_pod("default", "web-1")["kind"] == "Pod");
  CHECK(client.requests_made() == 4);
  CHECK(h.sleeper.waits().size() == 3);
}

TEST_CASE("ApiClient does not retry certificate errors", "[k8s]") {
  Harness h;
  h.transport.push_error(
      TransportError(TransportError::Kind::TlsVerify, "TLS certificate rejected: hostname mismatch"));
  ApiClient client = h.client();
  ApiError e = api_error_of([&] { client.get_pod("default", "web-1"); });
  CHECK(e.http_status() == 0);
  CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Kubernetes));
  CHECK_THAT(e.msg(), Catch::Contains("hostname mismatch") && Catch::Contains("pods \"web-1\""));
  CHECK(client.requests_made() == 1);
  CHECK(h.sleeper.waits().empty());
}

TEST_CASE("ApiClient does not retry 404 and names the missing object", "[k8s]") {
  Harness h;
  h.transport.push_response(404, status_json(404, "NotFound", "pods \"web-1\" not found"));
  ApiClient client = h.client();
  ApiError e = api_error_of([&] { client.get_pod("default", "web-1"); });
  CHECK(e.not_found());
  CHECK(e.reason() == "NotFound");
  CHECK(e.api_message() == "pods \"web-1\" not found");
  CHECK(e.msg() == "pods \"web-1\" not found in namespace \"default\"");
  CHECK(client.requests_made() == 1);
  CHECK(h.sleeper.waits().empty());

  h.transport.push_response(404, "404 page not found");
  ApiError nad = api_error_of([&] { client.get_nad("tenant-a", "sriov-net"); });
  CHECK(nad.reason() == "NotFound");
  CHECK(nad.msg() == "network-attachment-definitions \"sriov-net\" not found in namespace \"tenant-a\"");
}

TEST_CASE("ApiClient does not retry 409 on the status update", "[k8s]") {
  Harness h;
  h.transport.push_response(
      409,
      status_json(409, "Conflict", "Operation cannot be fulfilled on pods \"web-1\": the object has been modified"));
  ApiClient client = h.client();
  ApiError e = api_error_of([&] { client.update_pod_status("default", "web-1", Json::parse(kPodJson)); });
  CHECK(e.conflict());
  CHECK_THAT(e.msg(), Catch::Contains("HTTP 409 Conflict") && Catch::Contains("has been modified"));
  CHECK(client.requests_made() == 1);
}

TEST_CASE("ApiClient reports 401 and 403 with the server's Status message and a hint", "[k8s]") {
  Harness h;
  h.transport.push_response(403,
                            status_json(403, "Forbidden",
                                        "pods \"web-1\" is forbidden: User "
                                        "\"system:serviceaccount:kube-system:manifold\" cannot get resource \"pods\""));
  h.transport.push_response(401, status_json(401, "Unauthorized", "Unauthorized"));
  ApiClient client = h.client();
  ApiError forbidden = api_error_of([&] { client.get_pod("default", "web-1"); });
  CHECK(forbidden.http_status() == 403);
  CHECK_THAT(forbidden.msg(), Catch::StartsWith("Kubernetes API GET pods \"web-1\" in namespace \"default\" failed: "
                                                "HTTP 403 Forbidden: pods \"web-1\" is forbidden"));
  CHECK_THAT(forbidden.msg(), Catch::Contains("RBAC"));
  ApiError unauthorized = api_error_of([&] { client.get_pod("default", "web-1"); });
  CHECK_THAT(unauthorized.msg(), Catch::Contains("HTTP 401 Unauthorized") && Catch::Contains("token"));
  CHECK_THAT(unauthorized.msg(), !Catch::Contains("s3cr3t-token"));
}

TEST_CASE("ApiClient gives up at the deadline with a clear message", "[k8s]") {
  Harness h;
  h.policy.max_attempts = 100;
  for (int i = 0; i < 10; ++i)
    h.transport.push_response(429, status_json(429, "TooManyRequests", "too many requests, please try again later"),
                              {{"Retry-After", "1"}});
  ApiClient client = h.client();
  ApiError e = api_error_of([&] { client.get_pod("default", "web-1"); });
  // Attempts at t = 0, 1, 2 s; at t = 2 s a 1 s wait would reach the 3 s deadline, so it stops there.
  CHECK(client.requests_made() == 3);
  CHECK(h.sleeper.waits() == std::vector<milliseconds>{milliseconds(1000), milliseconds(1000)});
  CHECK(e.http_status() == 429);
  CHECK(e.reason() == "TooManyRequests");
  CHECK(e.msg() ==
        "Kubernetes API still answering 429 TooManyRequests to GET pods \"web-1\" in namespace \"default\" after 3 "
        "attempts over 2.0s (deadline of 3.0s reached): too many requests, please try again later");
}

TEST_CASE("ApiClient gives up at the attempt limit", "[k8s]") {
  Harness h;
  h.policy.max_attempts = 3;
  h.policy.total_deadline = milliseconds(60000);
  for (int i = 0; i < 3; ++i) h.transport.push_response(503, "");
  ApiClient client = h.client();
  ApiError e = api_error_of([&] { client.get_nad("default", "net1"); });
  CHECK(client.requests_made() == 3);
  CHECK(h.sleeper.waits().size() == 2);
  CHECK_THAT(e.msg(),
             Catch::StartsWith("Kubernetes API still answering 503 ServiceUnavailable to GET "
                               "network-attachment-definitions \"net1\" in namespace \"default\" after 3 attempts"));
  CHECK_THAT(e.msg(), Catch::Contains("(limit of 3 attempts reached)"));
}

TEST_CASE("ApiClient bounds each attempt by the remaining deadline", "[k8s]") {
  Harness h;
  h.policy.request_timeout = milliseconds(2000);
  h.policy.total_deadline = milliseconds(2500);
  h.transport.on_send([&](const HttpRequest&) { h.clock.advance(milliseconds(2000)); });
  h.transport.push_error(TransportError(TransportError::Kind::Timeout, "did not answer within 2000 ms"));
  h.transport.push_error(TransportError(TransportError::Kind::Timeout, "did not answer within 400 ms"));
  ApiClient client = h.client();
  ApiError e = api_error_of([&] { client.get_pod("default", "web-1"); });
  REQUIRE(h.transport.timeouts().size() == 2);
  CHECK(h.transport.timeouts()[0] == milliseconds(2000));
  CHECK(h.transport.timeouts()[1] == milliseconds(400));  // 2500 − 2000 − 100 ms backoff
  CHECK(e.http_status() == 0);
  CHECK_THAT(e.msg(),
             Catch::StartsWith("Kubernetes API unreachable for GET pods \"web-1\" in namespace \"default\" "
                               "after 2 attempts over 4.1s (deadline of 2.5s reached): did not answer within 400 ms"));
}

TEST_CASE("ApiClient reads token_file once per client, so a rotated token is picked up next time", "[k8s]") {
  Harness h;
  h.auth.token.clear();
  h.auth.token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  h.files.add(h.auth.token_file, "first-token\n");
  h.transport.push_response(200, kPodJson);
  h.transport.push_response(200, kPodJson);
  h.transport.push_response(200, kPodJson);
  {
    ApiClient client = h.client();
    client.get_pod("default", "web-1");
    client.get_pod("default", "web-1");
  }
  h.files.add(h.auth.token_file, "second-token");
  h.client().get_pod("default", "web-1");
  auto auth_of = [&](std::size_t i) {
    return HttpResponse{0, h.transport.requests()[i].headers, ""}.header("Authorization");
  };
  CHECK(auth_of(0) == "Bearer first-token");
  CHECK(auth_of(1) == "Bearer first-token");
  CHECK(auth_of(2) == "Bearer second-token");
  CHECK(h.files.reads().size() == 2);
}

TEST_CASE("ApiClient token_file wins over token, a missing file falls back to it", "[k8s]") {
  Harness h;
  h.auth.token_file = "/run/token";
  h.files.add("/run/token", "from-file");
  h.transport.push_response(200, kPodJson);
  h.client().get_pod("default", "web-1");
  CHECK(HttpResponse{0, h.transport.requests()[0].headers, ""}.header("Authorization") == "Bearer from-file");

  h.files.remove("/run/token");
  h.transport.push_response(200, kPodJson);
  h.client().get_pod("default", "web-1");
  CHECK(HttpResponse{0, h.transport.requests()[1].headers, ""}.header("Authorization") == "Bearer s3cr3t-token");
}

TEST_CASE("ApiClient fails clearly on an unreadable or invalid token file, without sending", "[k8s]") {
  Harness h;
  h.auth.token.clear();
  h.auth.token_file = "/run/token";
  cni::CniError missing = cni_error_of([&] { h.client().get_pod("default", "web-1"); });
  CHECK(missing.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
  CHECK_THAT(missing.msg(), Catch::Contains("/run/token"));

  h.files.add("/run/token", "  \n");
  CHECK_THAT(cni_error_of([&] { h.client().get_pod("default", "web-1"); }).msg(), Catch::Contains("is empty"));

  h.files.add("/run/token", "abc\x01secret-part");
  cni::CniError bad = cni_error_of([&] { h.client().get_pod("default", "web-1"); });
  CHECK_THAT(bad.msg(), Catch::Contains("control"));
  CHECK_THAT(bad.msg(), !Catch::Contains("secret-part"));
  CHECK(h.transport.requests().empty());
}

TEST_CASE("ApiClient sends no Authorization header without credentials", "[k8s]") {
  Harness h;
  h.auth.token.clear();
  h.transport.push_response(200, kPodJson);
  h.client().get_pod("default", "web-1");
  CHECK(HttpResponse{0, h.transport.requests()[0].headers, ""}.header("Authorization").empty());
}

TEST_CASE("ApiClient never puts the token into an error", "[k8s]") {
  Harness h;
  h.transport.push_response(400, status_json(400, "BadRequest", "bad header: Bearer s3cr3t-token\r\nfoo"));
  ApiError e = api_error_of([&] { h.client().get_pod("default", "web-1"); });
  CHECK_THAT(e.msg(), !Catch::Contains("s3cr3t-token"));
  CHECK_THAT(e.msg(), Catch::Contains("Bearer <redacted>  foo"));
  CHECK_THAT(e.api_message(), !Catch::Contains("s3cr3t-token"));
}

TEST_CASE("ApiClient validates namespaces and names before building a path", "[k8s]") {
  Harness h;
  ApiClient client = h.client();
  for (const std::string& ns :
       std::vector<std::string>{"", "Default", "a/b", "..", "kube_system", "-a", std::string(64, 'a')}) {
    cni::CniError e = cni_error_of([&] { client.get_pod(ns, "web-1"); });
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::InvalidConfig));
    CHECK_THAT(e.msg(), Catch::Contains("invalid Kubernetes namespace"));
  }
  for (const std::string& name : std::vector<std::string>{"", "../../secrets/x", "web 1", "web%2F1", "web/1", "Web-1",
                                                          "a..b", "a.", std::string(254, 'a')}) {
    cni::CniError e = cni_error_of([&] { client.get_nad("default", name); });
    CHECK_THAT(e.msg(), Catch::Contains("invalid NetworkAttachmentDefinition name"));
  }
  CHECK_THAT(cni_error_of([&] { client.update_pod_status("default", "x?y", Json::object()); }).msg(),
             Catch::Contains("invalid pod name \"x?y\""));
  CHECK_THAT(cni_error_of([&] { client.create_event("NS", Json::object()); }).msg(), Catch::Contains("namespace"));
  // Control characters are escaped in the message.
  CHECK_THAT(cni_error_of([&] { client.get_pod("default", "a\nb"); }).msg(), Catch::Contains("\"a\\x0ab\""));
  CHECK(client.requests_made() == 0);
  CHECK(h.transport.requests().empty());
}

TEST_CASE("ApiClient rejects answers that are not JSON objects of the right kind", "[k8s]") {
  Harness h;
  h.transport.push_response(200, R"({"kind":"Pod","metadata":{"name":"web-1")");  // truncated
  h.transport.push_response(200, R"(["not", "an", "object"])");
  h.transport.push_response(200, R"({"kind":"Status","status":"Success"})");
  h.transport.push_response(200, "");
  ApiClient client = h.client();
  auto decoding = [&] {
    cni::CniError e = cni_error_of([&] { client.get_pod("default", "web-1"); });
    CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Decoding));
    return e.msg();
  };
  CHECK_THAT(decoding(), Catch::Contains("answer to GET pods \"web-1\" in namespace \"default\" is not valid JSON"));
  CHECK_THAT(decoding(), Catch::Contains("is not a JSON object"));
  CHECK_THAT(decoding(), Catch::Contains("has kind \"Status\", expected Pod"));
  CHECK_THAT(decoding(), Catch::Contains("is not valid JSON"));
  CHECK(client.requests_made() == 4);
}

TEST_CASE("parse_status reads reason, message and code of a Status object", "[k8s]") {
  std::optional<ApiStatus> s = parse_status(status_json(404, "NotFound", "pods \"x\" not found"));
  REQUIRE(s);
  CHECK(s->reason == "NotFound");
  CHECK(s->message == "pods \"x\" not found");
  CHECK(s->code == 404);
  std::optional<ApiStatus> partial = parse_status(R"({"kind":"Status","message":42,"code":"x"})");
  REQUIRE(partial);
  CHECK(partial->reason.empty());
  CHECK(partial->message.empty());
  CHECK(partial->code == 0);
  CHECK_FALSE(parse_status(R"({"kind":"Pod"})"));
  CHECK_FALSE(parse_status(R"({"reason":"NotFound"})"));
  CHECK_FALSE(parse_status("<html>502 Bad Gateway</html>"));
  CHECK_FALSE(parse_status(""));
  CHECK_FALSE(parse_status("[1,2]"));
}

TEST_CASE("reason_for_status and DNS-1123 validators", "[k8s]") {
  CHECK(reason_for_status(429) == "TooManyRequests");
  CHECK(reason_for_status(504) == "Timeout");
  CHECK(reason_for_status(299).empty());
  CHECK(is_dns1123_label("kube-system"));
  CHECK(is_dns1123_label("a"));
  CHECK(is_dns1123_label(std::string(63, 'a')));
  CHECK_FALSE(is_dns1123_label(std::string(64, 'a')));
  CHECK_FALSE(is_dns1123_label("a.b"));
  CHECK_FALSE(is_dns1123_label("a-"));
  CHECK(is_dns1123_subdomain("macvlan.conf-1"));
  CHECK(is_dns1123_subdomain(std::string(253, 'a')));
  CHECK_FALSE(is_dns1123_subdomain(std::string(254, 'a')));
  CHECK_FALSE(is_dns1123_subdomain(".a"));
  CHECK_FALSE(is_dns1123_subdomain("a_b"));
}
