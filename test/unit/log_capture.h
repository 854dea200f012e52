// Test helper: captures what the process-wide logger writes for the lifetime of one object — every
// level down to debug, stderr off — and restores the logger's defaults (error level, stderr on, no
// file sink) when it goes away. Every unit test that asserts on a log line uses this one type.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/log.h"

namespace manifold::test {

/// The log lines written while it lives.
class LogCapture {
 public:
  LogCapture() {
    auto sink = std::make_unique<Sink>(lines_);
    auto& logger = util::Logger::instance();
    logger.set_level(util::LogLevel::Debug);
    logger.set_to_stderr(false);
    logger.set_file_sink(std::move(sink));
  }
  ~LogCapture() {
    auto& logger = util::Logger::instance();
    logger.set_file_sink(nullptr);
    logger.set_to_stderr(true);
    logger.set_level(util::LogLevel::Error);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// Every line captured so far, concatenated.
  std::string text() const {
    std::string all;
    for (const std::string& line : *lines_) all += line;
    return all;
  }
  /// True when some captured line contains `needle`.
  bool contains(std::string_view needle) const {
    for (const std::string& line : *lines_)
      if (line.find(needle) != std::string::npos) return true;
    return false;
  }

 private:
  struct Sink final : util::LogSink {
    explicit Sink(std::shared_ptr<std::vector<std::string>> out) : out_(std::move(out)) {}
    void write_line(std::string_view line) override { out_->emplace_back(line); }
    std::shared_ptr<std::vector<std::string>> out_;
  };
  std::shared_ptr<std::vector<std::string>> lines_ = std::make_shared<std::vector<std::string>>();
};

}  // namespace manifold::test
