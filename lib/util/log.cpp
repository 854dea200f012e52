// Implementation of the process-wide logger: level filter, line format and sinks.
#include "util/log.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include "util/unique_fd.h"

namespace manifold::util {

namespace {

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Panic:
      return "panic";
    case LogLevel::Error:
      return "error";
    case LogLevel::Verbose:
      return "verbose";
    case LogLevel::Debug:
      return "debug";
  }
  return "?";
}

}  // namespace

bool parse_log_level(std::string_view text, LogLevel& out) {
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
  if (lower == "panic")
    out = LogLevel::Panic;
  else if (lower == "error")
    out = LogLevel::Error;
  else if (lower == "verbose")
    out = LogLevel::Verbose;
  else if (lower == "debug")
    out = LogLevel::Debug;
  else
    return false;
  return true;
}

Logger& Logger::instance() {
  static Logger logger;
  return logger;
}

void Logger::set_level(LogLevel level) { level_ = level; }

void Logger::set_to_stderr(bool on) { to_stderr_ = on; }

void Logger::set_file_sink(std::unique_ptr<LogSink> sink) {
  std::lock_guard lock(mu_);
  file_ = std::move(sink);
}

void Logger::set_context(std::string container_id, std::string pod) {
  std::lock_guard lock(mu_);
  context_.clear();
  if (!container_id.empty()) context_ += "cid=" + container_id.substr(0, 12);
  if (!pod.empty()) context_ += (context_.empty() ? "" : " ") + std::string("pod=") + pod;
}

void Logger::write(LogLevel level, std::string_view message) {
  std::lock_guard lock(mu_);
  std::string line = rfc3339_now();
  line += " [";
  line += level_name(level);
  line += "] ";
  if (!context_.empty()) line += "[" + context_ + "] ";
  line += message;
  line += '\n';
  if (file_) file_->write_line(line);
  if (to_stderr_ || !file_) (void)write_all(STDERR_FILENO, line);
}

std::string rfc3339_now() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace manifold::util
