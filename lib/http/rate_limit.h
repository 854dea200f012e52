// A ceiling on a process's API request rate: a token bucket shared by every transport that takes
// from it, and the HttpTransport decorator that takes one token before each request it sends. The
// node agent puts every request of its own (list, watch, hot-plug) behind one bucket, so that no
// failure mode — a server that ends every watch at once, a storm of annotation changes — makes a
// node send more than the ceiling; each node of a cluster doing the same is what flattens an API server.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "http/http.h"
#include "util/clock.h"

namespace manifold::http {

/// A token bucket: up to `burst` requests at once, then `per_second` on average. Thread-safe.
class RequestRateLimit {
 public:
  /// A full bucket. `per_second` and `burst` must be positive (else std::invalid_argument).
  RequestRateLimit(double per_second, double burst, std::shared_ptr<util::Clock> clock,
                   std::shared_ptr<util::Sleeper> sleeper);
  /// Takes one token, first sleeping as long as the bucket needs to refill one (the token is
  /// reserved before the sleep, so concurrent callers queue up instead of all waking at once).
  /// Returns the time waited (zero when a token was there).
  std::chrono::milliseconds acquire();
  /// Requests that had to wait for a token so far.
  std::uint64_t throttled() const;

 private:
  double per_second_;
  double burst_;
  std::shared_ptr<util::Clock> clock_;
  std::shared_ptr<util::Sleeper> sleeper_;
  mutable std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point refilled_;
  std::uint64_t throttled_ = 0;
};

/// An HttpTransport that takes a token from `limit` before each request it passes on to `inner`
/// (one per request of a batch, one per stream opened).
class RateLimitedTransport final : public HttpTransport {
 public:
  /// Decorates `inner`; `limit` is shared with the other transports under the same ceiling.
  RateLimitedTransport(std::unique_ptr<HttpTransport> inner, std::shared_ptr<RequestRateLimit> limit);
  /// One token, then inner's send().
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override;
  /// One token per request, then inner's send_batch() (the wait does not count against `timeout`).
  std::vector<BatchOutcome> send_batch(const std::vector<HttpRequest>& requests,
                                       std::chrono::milliseconds timeout) override;
  /// One token, then inner's stream().
  StreamResult stream(const HttpRequest& request, const StreamOptions& options,
                      const std::function<bool(std::string_view)>& on_data) override;

 private:
  std::unique_ptr<HttpTransport> inner_;
  std::shared_ptr<RequestRateLimit> limit_;
};

}  // namespace manifold::http
