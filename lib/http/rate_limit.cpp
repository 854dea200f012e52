// Implementation of the request rate ceiling: the token bucket and the transport that draws on it.
#include "http/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace manifold::http {

RequestRateLimit::RequestRateLimit(double per_second, double burst, std::shared_ptr<util::Clock> clock,
                                   std::shared_ptr<util::Sleeper> sleeper)
    : per_second_(per_second),
      burst_(burst),
      clock_(std::move(clock)),
      sleeper_(std::move(sleeper)),
      tokens_(burst),
      refilled_(clock_->now()) {
  if (!(per_second > 0) || !(burst >= 1))
    throw std::invalid_argument("a request rate limit needs rate > 0, burst >= 1");
}

std::chrono::milliseconds RequestRateLimit::acquire() {
  std::chrono::milliseconds wait{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = clock_->now();
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    tokens_ = std::min(burst_, tokens_ + std::max(elapsed, 0.0) * per_second_);
    refilled_ = now;
    tokens_ -= 1;  // reserved now: a token below zero is one a sleeping caller is waiting for
    if (tokens_ < 0) {
      wait = std::chrono::milliseconds(static_cast<long long>(std::ceil(-tokens_ / per_second_ * 1000)));
      ++throttled_;
    }
  }
  if (wait.count() > 0) sleeper_->sleep_for(wait);
  return wait;
}

std::uint64_t RequestRateLimit::throttled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return throttled_;
}

RateLimitedTransport::RateLimitedTransport(std::unique_ptr<HttpTransport> inner,
                                           std::shared_ptr<RequestRateLimit> limit)
    : inner_(std::move(inner)), limit_(std::move(limit)) {}

HttpResponse RateLimitedTransport::send(const HttpRequest& request, std::chrono::milliseconds timeout) {
  limit_->acquire();
  return inner_->send(request, timeout);
}

std::vector<BatchOutcome> RateLimitedTransport::send_batch(const std::vector<HttpRequest>& requests,
                                                           std::chrono::milliseconds timeout) {
  for (std::size_t i = 0; i < requests.size(); ++i) limit_->acquire();
  return inner_->send_batch(requests, timeout);
}

StreamResult RateLimitedTransport::stream(const HttpRequest& request, const StreamOptions& options,
                                          const std::function<bool(std::string_view)>& on_data) {
  limit_->acquire();
  return inner_->stream(request, options, on_data);
}

}  // namespace manifold::http
