// Decoding the body of a Kubernetes watch (GET ...?watch=1): the API server writes one JSON event
// object per line, {"type":"ADDED","object":{...}}, into a body that does not end on its own and
// reaches us in pieces cut anywhere (HttpTransport::stream). WatchDecoder reassembles the lines,
// bounds each one, and checks the event's shape; what the object means is the caller's business.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cni/error.h"
#include "util/json.h"

namespace manifold::k8s {

/// One event of a Kubernetes watch stream.
struct WatchEvent {
  std::string type;  ///< ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  Json object;       ///< the object (for ERROR, a Status)
};

/// Thrown for a watch stream that is not one: a line that is not a JSON object with a string "type"
/// and an object "object", an unknown type, or an event larger than the bound. Code 103 (Kubernetes).
class WatchStreamError : public cni::CniError {
 public:
  /// Creates the error; `msg` quotes at most a bounded, escaped excerpt of the offending line.
  explicit WatchStreamError(std::string msg);
};

/// Splits a watch body into events: newline-delimited JSON objects (the API server writes one per
/// line), arriving in arbitrary pieces; blank lines are skipped and a CR before the LF is ignored.
class WatchDecoder {
 public:
  /// Largest accepted event (one line, without its line feed), default 4 MiB.
  explicit WatchDecoder(std::size_t max_event_bytes = 4u << 20);
  /// Appends `bytes`; returns every event completed by them, in order. Throws WatchStreamError;
  /// bytes already buffered for a partial line count against the bound, so an endless line is
  /// refused as soon as it passes max_event_bytes (not after it ends). After a throw the stream is
  /// unusable (the events completed earlier in the same call are dropped with it) and the decoder
  /// holds nothing.
  std::vector<WatchEvent> feed(std::string_view bytes);
  /// Bytes of an incomplete event waiting for the rest.
  std::size_t pending() const { return partial_.size(); }

 private:
  /// Appends `more` to the partial line, refusing it when the line would pass the bound.
  void append(std::string_view more);
  /// Decodes the complete line in partial_ into `out` (nothing for a blank line) and clears it.
  void finish_line(std::vector<WatchEvent>& out);

  std::size_t max_event_bytes_;
  std::string partial_;
};

}  // namespace manifold::k8s
