// The agent's metrics of its lookups from memory (lookup/cache_answers.h):
// manifold_agent_lookups_total{object="pod|nad", result="hit|forwarded", reason=…} counts each GET
// of a CNI call the relay saw, answered from memory ("cached", or "waited" when it came after waiting
// for the watch or a LIST) or forwarded to the API server (reason: lookup::verdict_name()), and
// manifold_agent_nad_lists_total{result="ok|failed"} the LISTs that refreshed the NAD cache.
#pragma once

#include <string_view>

#include "agent/metrics.h"
#include "lookup/cache_answers.h"

namespace manifold::agent {

/// The lookup counts as metrics.
class LookupMetrics final : public lookup::LookupCounters {
 public:
  /// Registers the families (the NAD lists at zero) in `registry`, which must outlive this object.
  explicit LookupMetrics(MetricsRegistry& registry);
  void lookup(std::string_view object, lookup::Verdict verdict, bool waited) override;
  /// One LIST of a namespace's NADs, `ok` or failed.
  void listed(bool ok) { (ok ? lists_ok_ : lists_failed_).inc(); }

 private:
  MetricsRegistry& registry_;
  Counter& lists_ok_;
  Counter& lists_failed_;
};

}  // namespace manifold::agent
