// The log file sink: appends lines to `logFile` (created 0600), falling back to stderr when the
// file cannot be opened or written, so that logging never breaks a CNI call.
#pragma once

#include <memory>
#include <string>

#include "util/log.h"

namespace manifold::util {

/// Appends log lines to a file.
class FileLogSink final : public LogSink {
 public:
  /// Opens (creates) `path` for appending; check ok() afterwards.
  explicit FileLogSink(const std::string& path);
  ~FileLogSink() override;
  FileLogSink(const FileLogSink&) = delete;
  FileLogSink& operator=(const FileLogSink&) = delete;

  /// True when the file is open.
  bool ok() const { return fd_ >= 0; }
  void write_line(std::string_view line) override;

 private:
  int fd_ = -1;
};

/// Opens a file sink for `path`, or returns nullptr (after a note on stderr) when it cannot be
/// opened, in which case the logger keeps writing to stderr.
std::unique_ptr<LogSink> open_log_file(const std::string& path);

}  // namespace manifold::util
