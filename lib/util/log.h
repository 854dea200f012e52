// Logging. One process-wide logger configured from the meta-plugin config (logFile, logLevel,
// logToStderr). Lines look like `2026-11-29T17:51:32.123Z [debug] [cid=abc pod=ns/name] message`.
// Logs never go to stdout: stdout belongs to the CNI result. A log file that cannot be opened falls
// back to stderr, so logging can never break a CNI call. Errors for the runtime are *not* printed
// here; they are printed once, by the skel dispatcher.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>

namespace manifold::util {

/// Log levels in Multus order: panic < error < verbose < debug.
enum class LogLevel { Panic = 0, Error = 1, Verbose = 2, Debug = 3 };

/// Parses "panic"/"error"/"verbose"/"debug" (case-insensitive); nullopt-like false on failure.
bool parse_log_level(std::string_view text, LogLevel& out);

/// Where log lines are written. The file sink is optional; stderr is used when asked or as fallback.
class LogSink {
 public:
  virtual ~LogSink() = default;
  /// Writes one complete line (with trailing newline).
  virtual void write_line(std::string_view line) = 0;
};

/// The process-wide logger.
class Logger {
 public:
  /// The single instance.
  static Logger& instance();

  /// Sets the maximum level written.
  void set_level(LogLevel level);
  /// Current level.
  LogLevel level() const { return level_; }
  /// Enables or disables the stderr sink.
  void set_to_stderr(bool on);
  /// Replaces the file sink (nullptr disables it).
  void set_file_sink(std::unique_ptr<LogSink> sink);
  /// Sets the context shown on every line (container ID, pod namespace/name).
  void set_context(std::string container_id, std::string pod);
  /// True when a message at `level` would be written.
  bool enabled(LogLevel level) const { return level <= level_; }
  /// Formats and writes one message.
  void write(LogLevel level, std::string_view message);

 private:
  Logger() = default;
  std::mutex mu_;
  LogLevel level_ = LogLevel::Error;
  bool to_stderr_ = true;
  std::unique_ptr<LogSink> file_;
  std::string context_;
};

/// Current UTC time as RFC 3339 with milliseconds.
std::string rfc3339_now();

namespace detail {
template <class... A>
void log_at(LogLevel level, A&&... parts) {
  Logger& l = Logger::instance();
  if (!l.enabled(level)) return;
  std::ostringstream os;
  (os << ... << parts);
  l.write(level, os.str());
}
}  // namespace detail

/// Logs an error-level message built by streaming every argument.
template <class... A>
void log_error(A&&... parts) {
  detail::log_at(LogLevel::Error, std::forward<A>(parts)...);
}
/// Logs a verbose-level message.
template <class... A>
void log_verbose(A&&... parts) {
  detail::log_at(LogLevel::Verbose, std::forward<A>(parts)...);
}
/// Logs a debug-level message.
template <class... A>
void log_debug(A&&... parts) {
  detail::log_at(LogLevel::Debug, std::forward<A>(parts)...);
}
/// Logs a warning; warnings are written at the verbose level (Multus has no warning level).
template <class... A>
void log_warning(A&&... parts) {
  detail::log_at(LogLevel::Verbose, "warning: ", std::forward<A>(parts)...);
}

}  // namespace manifold::util
