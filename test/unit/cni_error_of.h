// Test helper: what CNI error a piece of code throws. Unit tests of every module check error codes
// and messages of rejected input; they all use these two functions.
#pragma once

#include <functional>
#include <string>

#include "cni/error.h"

namespace manifold::test {

/// Runs `fn` and returns the code of the CniError it throws (0 when it throws none); the error's
/// message goes to `msg` when given. Any other exception propagates (and fails the test).
inline unsigned code_of(const std::function<void()>& fn, std::string* msg = nullptr) {
  try {
    fn();
  } catch (const cni::CniError& e) {
    if (msg) *msg = e.msg();
    return e.code();
  }
  return 0;
}

/// Runs `fn` and returns the message of the CniError it throws ("" when it throws none).
inline std::string message_of(const std::function<void()>& fn) {
  std::string msg;
  code_of(fn, &msg);
  return msg;
}

}  // namespace manifold::test
