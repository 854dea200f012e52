// Fuzz target: Kubernetes API answers (pod, NetworkAttachmentDefinition, Status). The input is the
// body of every answer a FakeHttpTransport gives an ApiClient, with the statuses manifold meets:
// 200 to GET pod / GET NAD / PUT pods/status, 404, 403, 409, a 500 burst until the attempt limit,
// 429 with the input's first line as Retry-After, then 201 to POST event. Accepted objects go on
// where ADD and the agent send them: the pod into the Pod decoder, its networks annotations into the
// selection parser and the pod back into PUT pods/status with a network-status annotation; the NAD
// into nad_delegate_config. Checks: only CniError escapes, error messages never contain the bearer
// token, retries stay within the policy.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_common.h"
#include "http/http.h"
#include "http/retry.h"
#include "k8s/api_client.h"
#include "k8s/nad_config.h"
#include "k8s/network_status.h"
#include "k8s/pod.h"
#include "k8s/selection.h"
#include "util/file_reader.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

constexpr const char* kToken = "s3cr3t-t0ken.fuzz";

/// A fresh client with a scripted transport and fake time, per scenario.
struct Harness {
  http::FakeHttpTransport transport;
  util::FakeClock clock;
  util::FakeSleeper sleeper{clock};
  http::FixedJitter jitter{0.5};
  util::FakeFileReader files;
  http::RetryPolicy policy = small_policy();
  k8s::ApiClient client{transport, auth(), policy, sleeper, clock, files, jitter};

  static http::ClusterAuth auth() {
    http::ClusterAuth a;
    a.server = "https://10.96.0.1:443/k8s/clusters/c-1";
    a.token = kToken;
    return a;
  }
  static http::RetryPolicy small_policy() {
    http::RetryPolicy p;
    p.max_attempts = 3;
    return p;
  }
};

/// Runs one call; its CniError must not leak the token.
template <class F>
bool call(F&& f) {
  try {
    f();
    return true;
  } catch (const cni::CniError& e) {
    const std::string shown = fuzz::render_error(e);
    if (e.msg().find(kToken) != std::string::npos || e.details().find(kToken) != std::string::npos)
      fuzz::fuzz_bug("the bearer token leaked into an error: " + shown.substr(0, 300));
    return false;
  }
}

void use_pod(k8s::ApiClient& client, http::FakeHttpTransport& transport, Json pod) {
  fuzz::accepts([&] { (void)k8s::decode_pod(pod, "default", "web-0"); });  // as the engine decodes a GET
  fuzz::accepts([&] { (void)k8s::decode_pod(pod); });                      // as the agent decodes a watched pod
  const Json* annotations = nullptr;
  if (auto meta = pod.find("metadata"); meta != pod.end() && meta->is_object())
    if (auto a = meta->find("annotations"); a != meta->end() && a->is_object()) annotations = &*a;
  if (annotations) {
    for (std::string_view key : {k8s::kNetworksAnnotation, k8s::kDefaultNetworkAnnotation}) {
      auto value = annotations->find(std::string(key));
      if (value == annotations->end() || !value->is_string()) continue;
      fuzz::accepts([&] { (void)k8s::parse_networks_annotation(value->get<std::string>(), "default"); });
    }
  }
  if (!pod.contains("metadata") || !pod["metadata"].is_object()) pod["metadata"] = Json::object();
  pod["metadata"]["annotations"][k8s::kNetworkStatusAnnotation] = k8s::render_network_status({});
  transport.push_response(409, R"({"kind":"Status","reason":"Conflict","code":409})");
  call([&] { (void)client.update_pod_status("default", "web-0", pod); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(fuzz::as_text(data, size));
  {
    Harness h;
    h.transport.push_response(200, input);
    Json pod;
    if (call([&] { pod = h.client.get_pod("default", "web-0"); })) use_pod(h.client, h.transport, std::move(pod));
  }
  {
    Harness h;
    h.transport.push_response(200, input);
    Json nad;
    if (call([&] { nad = h.client.get_nad("default", "macvlan-conf"); }))
      fuzz::accepts([&] { (void)k8s::nad_delegate_config(nad); });
  }
  {
    Harness h;
    h.transport.push_response(200, input);
    call([&] { (void)h.client.update_pod_status("default", "web-0", Json{{"kind", "Pod"}}); });
  }
  for (int status : {404, 403, 409, 401, 422}) {
    Harness h;
    h.transport.push_response(status, input);
    if (call([&] { (void)h.client.get_nad("kube-system", "sriov.net"); }))
      fuzz::fuzz_bug("an HTTP " + std::to_string(status) + " answer was accepted");
  }
  {
    Harness h;
    for (int i = 0; i < 3; ++i) h.transport.push_response(500, input);
    if (call([&] { (void)h.client.get_pod("default", "web-0"); })) fuzz::fuzz_bug("a 500 burst was accepted");
    if (h.client.requests_made() != h.policy.max_attempts || h.transport.pending() != 0)
      fuzz::fuzz_bug("the retry loop did not stop at the attempt limit");
  }
  {
    Harness h;
    const std::string first_line = input.substr(0, input.find('\n'));
    h.transport.push_response(429, input, {{"Retry-After", first_line}});
    h.transport.push_response(200, R"({"kind":"Pod"})");
    call([&] { (void)h.client.get_pod("default", "web-0"); });
    (void)http::parse_retry_after(first_line);
  }
  {
    Harness h;
    h.transport.push_response(201, input);
    call([&] { h.client.create_event("default", Json{{"kind", "Event"}, {"metadata", {{"name", "web-0.1"}}}}); });
  }
  (void)k8s::parse_status(input);
  return 0;
}
