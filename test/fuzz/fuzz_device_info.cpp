// Fuzz target: a device plugin's device-info file, which manifold copies to the attachment's file
// and reports in network-status. The input is the file's content. Checks: decoding never throws;
// what it accepts is an object of known keys whose values are strings (or objects of strings), it
// serialises to JSON that decodes to itself (what is written is what is read back), and what
// network-status would show of it is the same object.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "kubelet/device_info.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

void check_strings(const Json& object, int depth) {
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) continue;
    if (value.is_object() && depth == 0) {
      check_strings(value, 1);
      continue;
    }
    fuzz::fuzz_bug("device-info kept a value that is not a string: " + key);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  Json info;
  try {
    info = kubelet::parse_device_info(text);
  } catch (...) {
    fuzz::fuzz_bug("parse_device_info threw");
  }
  if (info.is_null()) return 0;
  if (!info.is_object()) fuzz::fuzz_bug("device-info decoded to something other than an object");
  check_strings(info, 0);
  const std::string written = info.dump();
  if (kubelet::parse_device_info(written) != info)
    fuzz::fuzz_bug("the written device-info does not read back the same");
  if (kubelet::normalize_device_info(info) != info) fuzz::fuzz_bug("normalising device-info twice changed it");
  return 0;
}
