// Fuzz target: the node agent's relay frames, from both sides. The input is a frame's payload as the
// agent reads it from a CNI call (decode_request, then the allowlist on every request) and as a CNI
// call reads the agent's answer (decode_answer for one to three requests). Checks: only CniError
// escapes the decoders, the allowlist never throws, and a request that decodes survives a round
// trip through encode_request unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/relay_policy.h"
#include "fuzz_common.h"
#include "k8s/relay_protocol.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

bool same(const k8s::HttpRequest& a, const k8s::HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.headers == b.headers && a.body == b.body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kQuiet;
  const std::string payload(fuzz::as_text(data, size));
  try {
    k8s::relay::RelayRequest request = k8s::relay::decode_request(payload);
    for (const k8s::HttpRequest& r : request.requests) {
      (void)agent::relay_refusal(r, "");
      (void)agent::relay_refusal(r, "/k8s/clusters/c-1");
      (void)agent::relay_headers(r.headers);
    }
    k8s::relay::RelayRequest again = k8s::relay::decode_request(k8s::relay::encode_request(request));
    if (again.server != request.server || again.timeout != request.timeout ||
        again.requests.size() != request.requests.size())
      fuzz::fuzz_bug("a decoded relay request changed in a round trip");
    for (std::size_t i = 0; i < request.requests.size(); ++i)
      if (!same(again.requests[i], request.requests[i]))
        fuzz::fuzz_bug("a decoded relay request changed in a round trip");
  } catch (const cni::CniError&) {}
  for (std::size_t expected = 1; expected <= 3; ++expected) {
    try {
      (void)k8s::relay::decode_answer(payload, expected);
    } catch (const cni::CniError&) {}
  }
  return 0;
}
