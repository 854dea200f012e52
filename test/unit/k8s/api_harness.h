// The ApiClient test harness shared by the client's test files: an ApiClient wired to a scripted
// FakeHttpTransport, a fake clock and sleeper (nothing sleeps), a fake file reader and jitter 0
// (every backoff exactly half its base), with a bounded retry policy the tests may change.
#pragma once

#include "k8s/api_client.h"

namespace manifold::k8s::testing {

/// A client wired to fakes; jitter 0 makes every backoff exactly half its base.
struct ApiHarness {
  http::FakeHttpTransport transport;
  util::FakeClock clock;
  util::FakeSleeper sleeper{clock};
  http::FixedJitter jitter{0.0};
  util::FakeFileReader files;
  http::RetryPolicy policy;
  http::ClusterAuth auth;

  /// Server https://10.0.0.1:6443, token "s3cr3t-token", 6 attempts, backoff 200 ms to 2 s, 1 s per
  /// request, 3 s in all.
  ApiHarness() {
    auth.server = "https://10.0.0.1:6443";
    auth.token = "s3cr3t-token";
    policy.max_attempts = 6;
    policy.initial_backoff = std::chrono::milliseconds(200);
    policy.max_backoff = std::chrono::milliseconds(2000);
    policy.request_timeout = std::chrono::milliseconds(1000);
    policy.total_deadline = std::chrono::milliseconds(3000);
  }
  /// A client over the harness's fakes and its current policy.
  ApiClient client() { return ApiClient(transport, auth, policy, sleeper, clock, files, jitter); }
};

}  // namespace manifold::k8s::testing
