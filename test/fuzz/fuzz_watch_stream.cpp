// Fuzz target: a Kubernetes watch stream, as the node agent reads it. The input is fed to a
// WatchDecoder whole, and again cut into pieces at positions taken from its first bytes; both must
// give the same events or fail the same way (a WatchStreamError, never anything else), every event
// has a known type and an object, and nothing is held past the per-event bound.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "k8s/watch_stream.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();
constexpr std::size_t kBound = 4096;

/// The events of `pieces` fed in order, or nullopt when the decoder refused the stream.
std::optional<std::vector<k8s::WatchEvent>> decode(const std::vector<std::string_view>& pieces) {
  k8s::WatchDecoder decoder(kBound);
  std::vector<k8s::WatchEvent> out;
  try {
    for (std::string_view piece : pieces) {
      for (auto& e : decoder.feed(piece)) out.push_back(std::move(e));
      if (decoder.pending() > kBound) fuzz::fuzz_bug("the decoder holds more than its bound");
    }
  } catch (const k8s::WatchStreamError&) {
    return std::nullopt;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  auto whole = decode({input});
  std::vector<std::string_view> pieces;
  std::size_t at = 0, step = size > 0 ? 1 + data[0] % 17 : 1;
  while (at < input.size()) {
    pieces.push_back(input.substr(at, step));
    at += step;
    step = 1 + (step * 7 + 3) % 31;
  }
  auto cut = decode(pieces);
  if (whole.has_value() != cut.has_value()) {
    // Cut into pieces, events before the bad line are returned first; both must refuse it.
    fuzz::fuzz_bug("the same stream was refused whole but not in pieces, or the other way round");
  }
  if (whole && cut) {
    if (whole->size() != cut->size()) fuzz::fuzz_bug("pieces changed the number of events");
    for (std::size_t i = 0; i < whole->size(); ++i) {
      const auto& a = (*whole)[i];
      const auto& b = (*cut)[i];
      if (a.type != b.type || a.object != b.object) fuzz::fuzz_bug("pieces changed an event");
      if (a.type != "ADDED" && a.type != "MODIFIED" && a.type != "DELETED" && a.type != "BOOKMARK" && a.type != "ERROR")
        fuzz::fuzz_bug("an event of unknown type: " + a.type.substr(0, 40));
      if (!a.object.is_object()) fuzz::fuzz_bug("an event whose object is not an object");
    }
  }
  return 0;
}
