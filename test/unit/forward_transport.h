// A transport for the relay's tests that forwards to one the test keeps (the relay server and the
// client each own the transports they are given, so a test hands them this and inspects its own).
#pragma once

#include <chrono>
#include <vector>

#include "http/http.h"

namespace manifold::test {

/// Forwards send() and send_batch() to `target`, which must outlive it.
template <class Target>
class Forward final : public http::HttpTransport {
 public:
  explicit Forward(Target& target) : target_(target) {}
  http::HttpResponse send(const http::HttpRequest& r, std::chrono::milliseconds t) override {
    return target_.send(r, t);
  }
  std::vector<http::BatchOutcome> send_batch(const std::vector<http::HttpRequest>& r,
                                             std::chrono::milliseconds t) override {
    return target_.send_batch(r, t);
  }

 private:
  Target& target_;
};

}  // namespace manifold::test
