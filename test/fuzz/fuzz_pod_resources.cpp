// Fuzz target: the kubelet's PodResources answer — the HTTP/2 DATA of a gRPC reply, a length-prefixed
// protobuf ListPodResourcesResponse — as manifold unframes and decodes it. The input is the body.
// Checks: unframing accepts exactly one uncompressed message within the bound or throws GrpcError;
// decoding accepts or throws CniError; an accepted table is sorted, and the decoded message, when it
// was accepted for one pod, decodes the same way again (no state carried between calls).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "kubelet/grpc_call.h"
#include "kubelet/pod_resources.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

void decode(std::string_view message) {
  kubelet::DeviceTable table;
  if (!fuzz::accepts([&] { table = kubelet::pod_resources_devices(message, "default", "web"); })) return;
  for (const auto& [resource, ids] : table)
    if (!std::is_sorted(ids.begin(), ids.end())) fuzz::fuzz_bug("device IDs of " + resource + " are not sorted");
  if (kubelet::pod_resources_devices(message, "default", "web") != table) fuzz::fuzz_bug("decoding is not repeatable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  decode(input);  // the message itself
  std::string message;
  try {
    message = kubelet::grpc_unframe(input, 1u << 16);
  } catch (const kubelet::GrpcError&) {
    return 0;
  }
  if (kubelet::grpc_frame(message) != input) fuzz::fuzz_bug("unframing accepted a body that is not one framed message");
  decode(message);
  return 0;
}
