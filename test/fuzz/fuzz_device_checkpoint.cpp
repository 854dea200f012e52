// Fuzz target: the kubelet's device checkpoint file (kubelet_internal_checkpoint), read as the
// fallback source of a pod's devices. The input is the file's text; it is read for the pod whose
// UID the seeds use. Checks: the reader accepts or throws CniError (never anything else), and an
// accepted table holds every resource's IDs sorted and without duplicates, so the hand-out that
// follows is deterministic; the allocator then hands every ID out exactly once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "kubelet/device_allocation.h"
#include "kubelet/device_checkpoint.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

void check_table(const kubelet::DeviceTable& table) {
  for (const auto& entry : table) {
    const std::string& resource = entry.first;
    const std::vector<std::string>& ids = entry.second;
    if (!std::is_sorted(ids.begin(), ids.end()) || std::adjacent_find(ids.begin(), ids.end()) != ids.end())
      fuzz::fuzz_bug("device IDs of " + resource + " are not sorted and unique");
    kubelet::DeviceAllocator allocator(table);
    for (const auto& id : ids)
      if (allocator.take(resource, "ns/net") != id) fuzz::fuzz_bug("the allocator skipped or repeated an ID");
    fuzz::accepts([&] { allocator.take(resource, "ns/net"); });  // exhausted: CniError only
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  kubelet::DeviceTable table;
  if (fuzz::accepts([&] { table = kubelet::checkpoint_devices(input, "/fuzz/checkpoint", "uid-1"); }))
    check_table(table);
  return 0;
}
