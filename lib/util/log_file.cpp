// Implementation of the append-only log file sink.
#include "util/log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace manifold::util {

FileLogSink::FileLogSink(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
}

FileLogSink::~FileLogSink() {
  if (fd_ >= 0) ::close(fd_);
}

void FileLogSink::write_line(std::string_view line) {
  if (fd_ < 0) return;
  while (!line.empty()) {
    ssize_t n = ::write(fd_, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Disk full or the file went away: continue on stderr rather than lose lines or fail.
      (void)!::write(STDERR_FILENO, line.data(), line.size());
      return;
    }
    line.remove_prefix(static_cast<size_t>(n));
  }
}

std::unique_ptr<LogSink> open_log_file(const std::string& path) {
  auto sink = std::make_unique<FileLogSink>(path);
  if (sink->ok()) return sink;
  std::string note = rfc3339_now() + " [error] cannot open logFile " + path + ": " + std::strerror(errno) +
                     "; logging to stderr\n";
  (void)!::write(STDERR_FILENO, note.data(), note.size());
  return nullptr;
}

}  // namespace manifold::util
