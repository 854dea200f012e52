// Regression tests for Kubernetes API answers found while fuzzing: a number beyond the range of a
// double (`1e999`) made nlohmann throw out_of_range, which escaped ApiClient as a non-CniError
// (fuzz_api_response with the JSON dictionary); and an answer nested hundreds of thousands of
// levels deep was accepted and then overflowed the stack when the pod was printed again for
// PUT pods/status (hand-made input beyond the target's -max_len); and a server echoing the bearer
// token as the object's "kind" got it quoted, unredacted, into the error message.
#include <catch2/catch.hpp>
#include <string>

#include "cni/error.h"
#include "k8s/api_client.h"

using namespace manifold;

namespace {

struct Client {
  http::FakeHttpTransport transport;
  util::FakeClock clock;
  util::FakeSleeper sleeper{clock};
  http::FixedJitter jitter{0.5};
  util::FakeFileReader files;
  k8s::ApiClient client{transport, auth(), http::RetryPolicy{}, sleeper, clock, files, jitter};

  static http::ClusterAuth auth() {
    http::ClusterAuth a;
    a.server = "https://10.96.0.1:443";
    a.token = "s3cr3t-t0ken";
    return a;
  }
};

/// The CniError code of a call that must fail.
unsigned error_code_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const cni::CniError& e) {
    return e.code();
  }
  FAIL("the answer was accepted");
  return 0;
}

std::string pod_nested(std::size_t depth) {
  return R"({"kind":"Pod","metadata":{"name":"web-0"},"x":)" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

}  // namespace

TEST_CASE("fuzz: an API answer with an out-of-range number is a decoding error", "[fuzz]") {
  for (const char* body : {R"({"kind":"Pod","x":1e999})", R"({"kind":"NetworkAttachmentDefinition","n":-1E400})"}) {
    INFO(body);
    Client c;
    c.transport.push_response(200, body);
    CHECK(error_code_of([&] { c.client.get_pod("default", "web-0"); }) ==
          static_cast<unsigned>(cni::ErrorCode::Decoding));
    c.transport.push_response(200, body);
    CHECK(error_code_of([&] { c.client.get_nad("default", "macvlan-conf"); }) ==
          static_cast<unsigned>(cni::ErrorCode::Decoding));
  }
}

TEST_CASE("fuzz: an API answer nested far too deep is a decoding error, not a stack overflow", "[fuzz]") {
  Client c;
  c.transport.push_response(200, pod_nested(400000));
  CHECK(error_code_of([&] { c.client.get_pod("default", "web-0"); }) ==
        static_cast<unsigned>(cni::ErrorCode::Decoding));
  c.transport.push_response(200, pod_nested(300));
  CHECK(error_code_of([&] {
          c.client.update_pod_status("default", "web-0", Json{{"kind", "Pod"}});
        }) == static_cast<unsigned>(cni::ErrorCode::Decoding));
}

TEST_CASE("fuzz: ordinary API answers still decode and go back out", "[fuzz]") {
  Client c;
  c.transport.push_response(200, pod_nested(200));
  Json pod = c.client.get_pod("default", "web-0");
  c.transport.push_response(200, pod.dump());
  Json updated = c.client.update_pod_status("default", "web-0", pod);
  CHECK(updated == pod);
  CHECK(c.transport.requests().back().body == pod.dump());
}

TEST_CASE("fuzz: a bearer token echoed as the answer's kind is redacted from the error", "[fuzz]") {
  // From fuzz_api_response (corpus/api_response/token-echoed-in-kind.json).
  const std::string token = Client::auth().token;
  for (const std::string& kind : {"routes" + token + "s", token, token + std::string(100, 'x')}) {
    Client c;
    c.transport.push_response(200, Json{{"kind", kind}, {"metadata", {{"name", "web-0"}}}}.dump());
    try {
      c.client.get_pod("default", "web-0");
      FAIL("a wrong kind was accepted");
    } catch (const cni::CniError& e) {
      CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::Decoding));
      CHECK(e.msg().find("has kind") != std::string::npos);
      CHECK(e.msg().find(token) == std::string::npos);
      CHECK(e.msg().find(token.substr(0, 8)) == std::string::npos);
      CHECK(e.msg().find("<redacted>") != std::string::npos);
    }
  }
}
