// Fuzz target: the node agent's relay frames, from both sides. The input is a frame's payload as the
// agent reads it from a CNI call (decode_request, then the allowlist on every request) and as a CNI
// call reads the agent's answer (decode_answer for one to three requests). Checks: only CniError
// escapes the decoders, neither the allowlist nor the node scope (an Event's body is read) throws,
// and a request that decodes survives a round trip through encode_request unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "relay/relay_policy.h"
#include "relay/relay_protocol.h"
#include "relay/relay_scope.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

bool same(const http::HttpRequest& a, const http::HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.headers == b.headers && a.body == b.body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kQuiet;
  const std::string payload(fuzz::as_text(data, size));
  try {
    relay::RelayRequest request = relay::decode_request(payload);
    for (const http::HttpRequest& r : request.requests) {
      (void)relay::relay_refusal(r, "");
      (void)relay::relay_refusal(r, "/k8s/clusters/c-1");
      (void)relay::relay_headers(r.headers);
      std::string why;
      (void)relay::scope_of(r, "", "node-a", why);
    }
    relay::RelayRequest again = relay::decode_request(relay::encode_request(request));
    if (again.server != request.server || again.timeout != request.timeout ||
        again.requests.size() != request.requests.size())
      fuzz::fuzz_bug("a decoded relay request changed in a round trip");
    for (std::size_t i = 0; i < request.requests.size(); ++i)
      if (!same(again.requests[i], request.requests[i]))
        fuzz::fuzz_bug("a decoded relay request changed in a round trip");
  } catch (const cni::CniError&) {}
  for (std::size_t expected = 1; expected <= 3; ++expected) {
    try {
      (void)relay::decode_answer(payload, expected);
    } catch (const cni::CniError&) {}
  }
  return 0;
}
