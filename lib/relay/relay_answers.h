// What may answer a relayed exchange from memory instead of the API server: the node agent's watch
// caches (lookup/cache_answers.h). The relay asks before it sends anything upstream; an exchange is
// answered from memory whole or not at all, and then travels upstream as without caches; the
// answers that come back from upstream are shown to it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "http/http.h"

namespace manifold::relay {

/// Answers GETs from memory.
class LocalAnswers {
 public:
  virtual ~LocalAnswers() = default;
  /// One answer per request of `requests` (already allowed by relay_refusal()), from memory, for a
  /// CNI call started for pod UID `pod_uid` ("" when the client did not say), waiting no later than
  /// `deadline`; nothing when any of them must go to the API server.
  virtual std::optional<std::vector<http::HttpResponse>> answer(const std::vector<http::HttpRequest>& requests,
                                                                const std::string& pod_uid,
                                                                std::chrono::steady_clock::time_point deadline) = 0;
  /// Told of each answer the API server gave to a relayed request (from the relay's threads), so
  /// that memory proven stale by it (a status PUT's 409) is no longer handed out.
  virtual void upstream_answer(const http::HttpRequest& request, const http::BatchOutcome& outcome) = 0;
};

}  // namespace manifold::relay
