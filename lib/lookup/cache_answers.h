// The relay's answers from memory: a CNI call's pod GET and NAD GETs, answered from the node agent's
// pod cache and NAD cache under their freshness rules (pod_cache.h, nad_cache.h), for the pod UID
// the call was started for (the relay request's podUid). An exchange is answered whole or goes to
// the API server whole; a lookup waits at most `max_wait` (and never past the exchange's own
// deadline) for the watch or a LIST to catch up. Only pods of this node are answered for, and NADs
// only of namespaces where this node has a pod: the relay's node rule (relay_scope.h), proven from
// the cache. Every lookup is counted, by object, result and reason.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "lookup/nad_cache.h"
#include "lookup/pod_cache.h"
#include "relay/relay_answers.h"

namespace manifold::lookup {

/// Where lookups are counted (the agent's metrics).
class LookupCounters {
 public:
  virtual ~LookupCounters() = default;
  /// One GET of `object` ("pod" or "nad") answered from memory (`verdict` Hit; `waited` when it came
  /// after a wait) or forwarded upstream for `verdict`.
  virtual void lookup(std::string_view object, Verdict verdict, bool waited) = 0;
};

/// The caches as the relay's LocalAnswers.
class CacheAnswers final : public relay::LocalAnswers {
 public:
  /// Answers from `pods` and `nads` (which must outlive it) for targets under the API server path
  /// prefix `base_path`, waiting at most `max_wait`, counting in `counters`.
  CacheAnswers(PodCache& pods, NadCache& nads, std::string base_path, std::chrono::milliseconds max_wait,
               LookupCounters& counters);

  std::optional<std::vector<http::HttpResponse>> answer(const std::vector<http::HttpRequest>& requests,
                                                        const std::string& pod_uid,
                                                        Clock::time_point deadline) override;
  /// A status PUT answered 409: the pod's cached copy of the PUT's resourceVersion is superseded.
  void upstream_answer(const http::HttpRequest& request, const http::BatchOutcome& outcome) override;

 private:
  struct Lookup {
    bool pod = false;  ///< a pod GET, else a NAD GET
    std::string ns, name;
  };
  std::optional<Lookup> classify(const http::HttpRequest& request) const;
  Verdict answer_one(const Lookup& lookup, const std::string& pod_uid, Clock::time_point deadline, std::string& body,
                     bool& waited);

  PodCache& pods_;
  NadCache& nads_;
  std::string base_path_;
  std::chrono::milliseconds max_wait_;
  LookupCounters& counters_;
};

}  // namespace manifold::lookup
