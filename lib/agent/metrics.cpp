// The metrics registry and its text exposition. Families are kept in a name-ordered map and each
// family's metrics in a map keyed by their name-sorted labels, so rendering in sorted order is a walk
// of the maps; every metric is heap-allocated once and never moved, so references handed out stay
// valid. One mutex guards the maps (registration and rendering); counters and gauges are atomics and
// each histogram has its own mutex, so updates never wait for a scrape to finish rendering.
#include "agent/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace manifold::agent {
namespace {

bool name_char(char c, bool first, bool colon) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

void check_name(std::string_view name, bool label) {
  bool ok = !name.empty() && !(label && name.substr(0, 2) == "__");
  for (std::size_t i = 0; ok && i < name.size(); ++i) ok = name_char(name[i], i == 0, !label);
  if (!ok)
    throw std::invalid_argument(std::string(label ? "invalid metric label name \"" : "invalid metric name \"") +
                                std::string(name) + "\"");
}

/// Appends `text` with backslash and newline escaped, and double quotes too when `quote`.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

/// `{a="x",b="y"}` with `le` appended when given; nothing for no labels.
std::string label_text(const Labels& labels, const std::string* le = nullptr) {
  if (labels.empty() && le == nullptr) return {};
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ',';
    out += name + "=\"";
    append_escaped(out, value, true);
    out += '"';
  }
  if (le != nullptr) out += std::string(out.size() > 1 ? "," : "") + "le=\"" + *le + "\"";
  return out + "}";
}

const char* const kTypeNames[] = {"counter", "gauge", "histogram"};
const char* const kHistogramSuffixes[] = {"_bucket", "_sum", "_count"};

// The agent's labelled families, each registered once per label value.
const char* const kFailedHelp = "Attachments and detachments of running pods' networks that failed, by operation.";
const char* const kReconciles = "manifold_agent_reconciles_total";
const char* const kReconcilesHelp = "Reconciliations of a pod's networks with its annotation, by result.";
const char* const kRestarts = "manifold_agent_watch_restarts_total";
const char* const kRestartsHelp = "Restarts of the pod watch, by reason.";

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";
  char buf[64];
  bool integral = v == std::trunc(v) && std::fabs(v) < 1e21;
  auto result = integral ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

void Counter::inc(double by) {
  if (!(by >= 0)) throw std::invalid_argument("a counter cannot be increased by " + format_metric_value(by));
  value_.fetch_add(by, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  if (!bounds_.empty() && bounds_.back() == INFINITY) bounds_.pop_back();
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (std::isnan(bounds_[i]) || (i > 0 && !(bounds_[i - 1] < bounds_[i])))
      throw std::invalid_argument("histogram bucket bounds must be increasing numbers");
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double v) {
  std::size_t bucket =
      std::isnan(v) ? bounds_.size()
                    : static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard lock(mu_);
  ++counts_[bucket];
  sum_ += v;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snap;
  std::lock_guard lock(mu_);
  snap.cumulative.reserve(counts_.size());
  for (std::uint64_t n : counts_) snap.cumulative.push_back(snap.count += n);
  snap.sum = sum_;
  return snap;
}

enum class MetricsRegistry::Type : int { Counter, Gauge, Histogram };

struct MetricsRegistry::Family {
  Type type;
  std::string help;
  std::vector<double> bounds;  // histograms only
  std::map<Labels, std::unique_ptr<Counter>> counters;
  std::map<Labels, std::unique_ptr<Gauge>> gauges;
  std::map<Labels, std::unique_ptr<Histogram>> histograms;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help, Type type,
                                                 const Labels& labels, Labels& sorted) {
  check_name(name, false);
  sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    check_name(sorted[i].first, true);
    if (i > 0 && sorted[i - 1].first == sorted[i].first)
      throw std::invalid_argument("metric " + name + " has the label " + sorted[i].first + " twice");
    if (type == Type::Histogram && sorted[i].first == "le")
      throw std::invalid_argument("histogram " + name + " cannot have a label named le");
  }
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second->type != type)
      throw std::invalid_argument("metric " + name + " is already registered as a " +
                                  kTypeNames[static_cast<int>(it->second->type)]);
    if (it->second->help != help) throw std::invalid_argument("metric " + name + " is registered with another help");
    return *it->second;
  }
  // A histogram's samples use its name with these suffixes, which no other family may take.
  for (const char* suffix : kHistogramSuffixes) {
    std::string_view s(suffix);
    bool clash = type == Type::Histogram && families_.count(name + suffix) != 0;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      auto stem = families_.find(name.substr(0, name.size() - s.size()));
      clash = clash || (stem != families_.end() && stem->second->type == Type::Histogram);
    }
    if (clash) throw std::invalid_argument("metric " + name + " clashes with the samples of a histogram");
  }
  auto family = std::make_unique<Family>();
  family->type = type;
  family->help = help;
  return *families_.emplace(name, std::move(family)).first->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Labels key;
  auto& slot = family(name, help, Type::Counter, labels, key).counters[key];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Labels key;
  auto& slot = family(name, help, Type::Gauge, labels, key).gauges[key];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help, std::vector<double> buckets,
                                      const Labels& labels) {
  auto fresh = std::make_unique<Histogram>(std::move(buckets));  // validates the bounds
  std::lock_guard lock(mu_);
  Labels key;
  bool is_new = families_.count(name) == 0;
  Family& f = family(name, help, Type::Histogram, labels, key);
  if (is_new) f.bounds = fresh->upper_bounds();
  if (f.bounds != fresh->upper_bounds())
    throw std::invalid_argument("histogram " + name + " is registered with other bucket bounds");
  auto& slot = f.histograms[key];
  if (!slot) slot = std::move(fresh);
  return *slot;
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name;
    if (!f->help.empty()) out += ' ';
    append_escaped(out, f->help, false);
    out += "\n# TYPE " + name + " " + kTypeNames[static_cast<int>(f->type)] + "\n";
    for (const auto& [labels, c] : f->counters)
      out += name + label_text(labels) + " " + format_metric_value(c->value()) + "\n";
    for (const auto& [labels, g] : f->gauges)
      out += name + label_text(labels) + " " + format_metric_value(g->value()) + "\n";
    for (const auto& [labels, h] : f->histograms) {
      Histogram::Snapshot snap = h->snapshot();
      for (std::size_t i = 0; i < snap.cumulative.size(); ++i) {
        std::string le = i < f->bounds.size() ? format_metric_value(f->bounds[i]) : "+Inf";
        out += name + "_bucket" + label_text(labels, &le) + " " + std::to_string(snap.cumulative[i]) + "\n";
      }
      out += name + "_sum" + label_text(labels) + " " + format_metric_value(snap.sum) + "\n";
      out += name + "_count" + label_text(labels) + " " + std::to_string(snap.count) + "\n";
    }
  }
  return out;
}

AgentMetrics::AgentMetrics(MetricsRegistry& r)
    : attachments_added(r.counter("manifold_agent_attachments_added_total",
                                  "Networks the agent attached to running pods (hot-plug).")),
      attachments_removed(r.counter("manifold_agent_attachments_removed_total",
                                    "Networks the agent detached from running pods (hot-unplug).")),
      attach_failed(r.counter("manifold_agent_attachments_failed_total", kFailedHelp, {{"operation", "attach"}})),
      detach_failed(r.counter("manifold_agent_attachments_failed_total", kFailedHelp, {{"operation", "detach"}})),
      reconcile_duration(r.histogram("manifold_agent_reconcile_duration_seconds",
                                     "Time taken to reconcile one pod's networks with its annotation.",
                                     {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})),
      reconciles_unchanged(r.counter(kReconciles, kReconcilesHelp, {{"result", "unchanged"}})),
      reconciles_changed(r.counter(kReconciles, kReconcilesHelp, {{"result", "changed"}})),
      reconciles_failed(r.counter(kReconciles, kReconcilesHelp, {{"result", "failed"}})),
      reconciles_invalid(r.counter(kReconciles, kReconcilesHelp, {{"result", "invalid"}})),
      watch_restarts_closed(r.counter(kRestarts, kRestartsHelp, {{"reason", "closed"}})),
      watch_restarts_error(r.counter(kRestarts, kRestartsHelp, {{"reason", "error"}})),
      watch_restarts_expired(r.counter(kRestarts, kRestartsHelp, {{"reason", "expired"}})),
      watch_restarts_empty(r.counter(kRestarts, kRestartsHelp, {{"reason", "empty"}})),
      pods_tracked(r.gauge("manifold_agent_pods_tracked", "Pods on this node that the agent tracks.")),
      sandboxes_tracked(r.gauge("manifold_agent_sandboxes_tracked",
                                "Pod sandboxes with a complete cache entry that the agent tracks.")),
      api_requests(
          r.counter("manifold_agent_api_requests_total", "Requests the agent sent to the Kubernetes API server.")),
      api_throttled(r.counter("manifold_agent_api_throttled_total",
                              "Requests the agent held back under its API request rate ceiling.")) {}

RelayMetrics::RelayMetrics(MetricsRegistry& registry)
    : answered_(registry.counter("manifold_agent_relay_exchanges_total",
                                 "CNI invocations' API exchanges the relay served, by result",
                                 {{"result", "answered"}})),
      refused_(registry.counter("manifold_agent_relay_exchanges_total",
                                "CNI invocations' API exchanges the relay served, by result",
                                {{"result", "refused"}})) {}

}  // namespace manifold::agent
