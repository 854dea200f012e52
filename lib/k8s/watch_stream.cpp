// Implementation of the watch stream decoder. Lines are parsed with util::parse_json_bounded (no
// exception from nlohmann, bounded nesting); messages quote at most 100 escaped bytes of a line.
#include "k8s/watch_stream.h"

#include <algorithm>
#include <array>

#include "util/json_parse.h"
#include "util/quote.h"

namespace manifold::k8s {
namespace {

constexpr std::size_t kQuotedBytes = 100;
constexpr std::array<std::string_view, 5> kEventTypes = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

}  // namespace

WatchStreamError::WatchStreamError(std::string msg) : cni::CniError(cni::ErrorCode::Kubernetes, std::move(msg)) {}

WatchDecoder::WatchDecoder(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

void WatchDecoder::append(std::string_view more) {
  if (partial_.size() + more.size() > max_event_bytes_) {
    std::string start = util::quote_bytes(partial_.empty() ? more : std::string_view(partial_), kQuotedBytes);
    partial_.clear();
    throw WatchStreamError("watch event larger than " + std::to_string(max_event_bytes_) +
                           " bytes from the Kubernetes API server, starting " + start);
  }
  partial_.append(more);
}

void WatchDecoder::finish_line(std::vector<WatchEvent>& out) {
  std::string line = std::move(partial_);
  partial_.clear();
  if (is_blank(line)) return;
  if (line.back() == '\r') line.pop_back();
  const auto invalid = [&](const std::string& why) {
    return WatchStreamError("invalid watch event from the Kubernetes API server (" + why +
                            "): " + util::quote_bytes(line, kQuotedBytes));
  };
  Json event = util::parse_json_bounded(line);
  if (event.is_discarded()) throw invalid("not JSON");
  if (!event.is_object()) throw invalid("not a JSON object");
  auto type = event.find("type");
  if (type == event.end() || !type->is_string()) throw invalid("no string \"type\"");
  auto object = event.find("object");
  if (object == event.end() || !object->is_object()) throw invalid("no object \"object\"");
  const std::string& name = type->get_ref<const std::string&>();
  if (std::find(kEventTypes.begin(), kEventTypes.end(), name) == kEventTypes.end())
    throw invalid("unknown type " + util::quote_bytes(name, 32));
  out.push_back(WatchEvent{name, std::move(*object)});
}

std::vector<WatchEvent> WatchDecoder::feed(std::string_view bytes) {
  std::vector<WatchEvent> out;
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      append(bytes);
      break;
    }
    append(bytes.substr(0, newline));
    bytes.remove_prefix(newline + 1);
    finish_line(out);
  }
  return out;
}

}  // namespace manifold::k8s
