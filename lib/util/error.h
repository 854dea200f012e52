// The one error the ground floor throws: an I/O failure of a file primitive (util/file_reader.h,
// util/atomic_file.h). Its message names the path and the cause, never the file's contents. util
// depends on nothing of ours, so it knows nothing of CNI error codes: the CNI dispatcher reports an
// IoError that reaches it as error 5 (I/O), and callers that know better (a kubeconfig that cannot
// be read is a configuration problem) catch it and say so.
#pragma once

#include <stdexcept>
#include <string>

namespace manifold::util {

/// A file could not be read or written.
class IoError : public std::runtime_error {
 public:
  /// `message` names the path and the cause.
  explicit IoError(const std::string& message) : std::runtime_error(message) {}
  /// The message (as std::runtime_error::what()).
  std::string msg() const { return what(); }
};

/// A file could not be read because it is larger than the reader's bound: its content is what is
/// wrong, not the file system.
class FileTooLarge : public IoError {
 public:
  /// `message` names the path and the bound.
  explicit FileTooLarge(const std::string& message) : IoError(message) {}
};

}  // namespace manifold::util
