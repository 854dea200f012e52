// The node agent's metrics: counters, gauges and histograms kept in a thread-safe registry that
// renders them in the Prometheus text exposition format (version 0.0.4) for GET /metrics. A metric
// is identified by its family name and its labels; it is created on first use and the same object
// is returned afterwards, and references to it stay valid as long as the registry lives. Names are
// checked against the Prometheus grammar when a metric is registered, and registering a family
// again with another type, help text or bucket layout is a programming error (std::invalid_argument).
// Updates are lock-free for counters and gauges; the worker thread updates while the status server's
// thread renders. AgentMetrics is the fixed set of families the agent exports.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "relay/relay_server.h"

namespace manifold::agent {

/// Label name/value pairs of one metric; their order does not matter (they are kept sorted by name).
using Labels = std::vector<std::pair<std::string, std::string>>;

/// A monotonically increasing count.
class Counter {
 public:
  /// Adds `by`, which must be a non-negative number (else std::invalid_argument).
  void inc(double by = 1);
  /// The current count.
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// A value that goes up and down.
class Gauge {
 public:
  /// Sets the value.
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  /// Adds `by`.
  void inc(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  /// Subtracts `by`.
  void dec(double by = 1) { value_.fetch_sub(by, std::memory_order_relaxed); }
  /// The current value.
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// Observations counted into cumulative buckets, with their sum and count.
class Histogram {
 public:
  /// A consistent copy of a histogram's state.
  struct Snapshot {
    /// Observations ≤ each upper bound, cumulative; one more entry than upper_bounds() (the +Inf bucket).
    std::vector<std::uint64_t> cumulative;
    /// The sum of every observation.
    double sum = 0;
    /// The number of observations (equal to the +Inf bucket).
    std::uint64_t count = 0;
  };

  /// A histogram with these bucket upper bounds: strictly increasing, no NaN (else
  /// std::invalid_argument). A trailing +Inf is dropped: the +Inf bucket is always implicit.
  explicit Histogram(std::vector<double> upper_bounds);
  /// Counts `v` into the first bucket whose bound is ≥ v (NaN only into +Inf) and adds it to the sum.
  void observe(double v);
  /// The bucket upper bounds, without the implicit +Inf.
  const std::vector<double>& upper_bounds() const { return bounds_; }
  /// The current state, taken atomically.
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  double sum_ = 0;
};

/// Every metric of the process, by name and labels; renders /metrics.
class MetricsRegistry {
 public:
  /// An empty registry.
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  /// The counter `name` with `labels` (created on first use; the same object afterwards). `help` is
  /// the HELP text of the family. Throws std::invalid_argument for an invalid metric or label name, a
  /// label name given twice, or a family already registered with another type or help text.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  /// The gauge `name` with `labels`; as counter().
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  /// The histogram `name` with `labels` and these bucket upper bounds; as counter(), and every
  /// histogram of a family must have the same bounds. The label name "le" is reserved.
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> buckets,
                       const Labels& labels = {});
  /// The text exposition of every metric: families sorted by name, each with `# HELP`, `# TYPE`, then
  /// its samples sorted by labels; histograms as _bucket{le=...} (cumulative, ending with
  /// le="+Inf"), _sum and _count.
  std::string render() const;

 private:
  struct Family;
  enum class Type : int;
  Family& family(const std::string& name, const std::string& help, Type type, const Labels& labels, Labels& sorted);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;
};

/// A number as the Prometheus text format writes it: integers without exponent where exact,
/// "+Inf", "-Inf", "NaN", otherwise the shortest text that reads back as the same double.
std::string format_metric_value(double v);

/// The metrics the node agent exports, all registered (at zero) on construction.
struct AgentMetrics {
  /// Registers every family in `registry`, which must outlive this object.
  explicit AgentMetrics(MetricsRegistry& registry);

  Counter& attachments_added;       ///< manifold_agent_attachments_added_total
  Counter& attachments_removed;     ///< manifold_agent_attachments_removed_total
  Counter& attach_failed;           ///< manifold_agent_attachments_failed_total{operation="attach"}
  Counter& detach_failed;           ///< manifold_agent_attachments_failed_total{operation="detach"}
  Histogram& reconcile_duration;    ///< manifold_agent_reconcile_duration_seconds
  Counter& reconciles_unchanged;    ///< manifold_agent_reconciles_total{result="unchanged"}
  Counter& reconciles_changed;      ///< manifold_agent_reconciles_total{result="changed"}
  Counter& reconciles_failed;       ///< manifold_agent_reconciles_total{result="failed"}
  Counter& reconciles_invalid;      ///< manifold_agent_reconciles_total{result="invalid"}
  Counter& watch_restarts_closed;   ///< manifold_agent_watch_restarts_total{reason="closed"}
  Counter& watch_restarts_error;    ///< manifold_agent_watch_restarts_total{reason="error"}
  Counter& watch_restarts_expired;  ///< manifold_agent_watch_restarts_total{reason="expired"}
  Counter& watch_restarts_empty;    ///< manifold_agent_watch_restarts_total{reason="empty"} (ended at once, no event)
  Gauge& pods_tracked;              ///< manifold_agent_pods_tracked
  Gauge& sandboxes_tracked;         ///< manifold_agent_sandboxes_tracked
  Counter& api_requests;            ///< manifold_agent_api_requests_total
  Counter& api_throttled;           ///< manifold_agent_api_throttled_total (held back by the rate ceiling)
};

/// The relay's counts as metrics: manifold_agent_relay_exchanges_total{result="answered|refused"}.
class RelayMetrics final : public relay::RelayCounters {
 public:
  /// Registers the family (at zero) in `registry`, which must outlive this object.
  explicit RelayMetrics(MetricsRegistry& registry);
  void answered() override { answered_.inc(); }
  void refused() override { refused_.inc(); }

 private:
  Counter& answered_;
  Counter& refused_;
};

}  // namespace manifold::agent
