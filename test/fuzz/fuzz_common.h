// Helpers shared by the libFuzzer targets. The contract every target checks: parsing hostile input
// either succeeds or throws cni::CniError (the expected way to reject it). Any other exception is
// left to escape LLVMFuzzerTestOneInput, which aborts and makes libFuzzer report a crash; broken
// invariants (a result we encoded that we cannot decode again, output that is not valid JSON, …)
// are reported through fuzz_bug(), which aborts too. Logging is switched to debug level with a sink
// that drops every line, so the log formatting of hostile text runs without flooding stderr.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "cni/error.h"
#include "util/json.h"
#include "util/log.h"

namespace manifold::fuzz {

/// A log sink that formats nothing further and keeps nothing.
class NullSink final : public util::LogSink {
 public:
  /// Drops the line.
  void write_line(std::string_view) override {}
};

/// Debug logging into a NullSink, nothing on stderr. Call once (from a static initialiser).
inline bool quiet_logging() {
  util::Logger& logger = util::Logger::instance();
  logger.set_level(util::LogLevel::Debug);
  logger.set_to_stderr(false);
  logger.set_file_sink(std::make_unique<NullSink>());
  return true;
}

/// Reports a broken invariant and aborts, so libFuzzer saves the input as a crash.
[[noreturn]] inline void fuzz_bug(const std::string& what) {
  std::fprintf(stderr, "FUZZ INVARIANT BROKEN: %s\n", what.c_str());
  std::abort();
}

/// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Renders an error the way the dispatcher does (must never throw).
inline std::string render_error(const cni::CniError& e) {
  return e.to_json("1.1.0").dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// Runs `f`; true when it returned, false when it rejected the input with CniError (whose JSON
/// rendering is exercised). Anything else propagates.
template <class F>
bool accepts(F&& f) {
  try {
    f();
    return true;
  } catch (const cni::CniError& e) {
    (void)render_error(e);
    return false;
  }
}

/// Like accepts(), but a CniError with code Internal (100, "a bug inside manifold") is a bug too.
template <class F>
bool accepts_no_internal(F&& f, const char* where) {
  try {
    f();
    return true;
  } catch (const cni::CniError& e) {
    if (e.code() == static_cast<unsigned>(cni::ErrorCode::Internal))
      fuzz_bug(std::string(where) + ": internal error: " + e.msg());
    (void)render_error(e);
    return false;
  }
}

/// Parses text we produced ourselves; it must be valid JSON.
inline Json must_parse(const std::string& text, const char* where) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) fuzz_bug(std::string(where) + " produced invalid JSON: " + text.substr(0, 200));
  return j;
}

}  // namespace manifold::fuzz
