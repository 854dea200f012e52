// Tests for lib/agent/metrics: the exact text exposition of a small registry, escaping of label
// values and help text, number formatting, histogram buckets, name validation and family clashes,
// concurrent updates while rendering, and the agent's own families present at zero from the start.
#include "agent/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

using manifold::agent::AgentMetrics;
using manifold::agent::format_metric_value;
using manifold::agent::Histogram;
using manifold::agent::MetricsRegistry;
using manifold::agent::RelayMetrics;

TEST_CASE("MetricsRegistry renders families sorted by name and samples sorted by labels", "[agent]") {
  MetricsRegistry r;
  r.counter("b_total", "B things.", {{"kind", "x"}}).inc(2);
  r.counter("b_total", "B things.", {{"kind", "a"}}).inc();
  r.gauge("a_gauge", "A \\ gauge\nwith \"two\" lines.").set(-1.5);
  Histogram& h = r.histogram("c_seconds", "C.", {0.25, 1, 10});
  for (double v : {0.125, 0.25, 4.0, 100.0}) h.observe(v);
  r.counter("d_total", "");
  CHECK(r.render() ==
        "# HELP a_gauge A \\\\ gauge\\nwith \"two\" lines.\n"
        "# TYPE a_gauge gauge\n"
        "a_gauge -1.5\n"
        "# HELP b_total B things.\n"
        "# TYPE b_total counter\n"
        "b_total{kind=\"a\"} 1\n"
        "b_total{kind=\"x\"} 2\n"
        "# HELP c_seconds C.\n"
        "# TYPE c_seconds histogram\n"
        "c_seconds_bucket{le=\"0.25\"} 2\n"
        "c_seconds_bucket{le=\"1\"} 2\n"
        "c_seconds_bucket{le=\"10\"} 3\n"
        "c_seconds_bucket{le=\"+Inf\"} 4\n"
        "c_seconds_sum 104.375\n"
        "c_seconds_count 4\n"
        "# HELP d_total\n"
        "# TYPE d_total counter\n"
        "d_total 0\n");
}

TEST_CASE("MetricsRegistry escapes label values and sorts labels by name", "[agent]") {
  MetricsRegistry r;
  r.gauge("g", "h", {{"z", "last"}, {"a", "back\\slash \"quoted\"\nnewline"}}).set(1);
  CHECK(r.render() == "# HELP g h\n# TYPE g gauge\ng{a=\"back\\\\slash \\\"quoted\\\"\\nnewline\",z=\"last\"} 1\n");
}

TEST_CASE("MetricsRegistry returns the same metric for the same name and labels", "[agent]") {
  MetricsRegistry r;
  auto& a = r.counter("x_total", "h", {{"a", "1"}, {"b", "2"}});
  CHECK(&a == &r.counter("x_total", "h", {{"b", "2"}, {"a", "1"}}));
  CHECK(&a != &r.counter("x_total", "h", {{"a", "1"}, {"b", "3"}}));
  auto& g = r.gauge("g", "h");
  CHECK(&g == &r.gauge("g", "h"));
  auto& h = r.histogram("h", "h", {1, 2});
  CHECK(&h == &r.histogram("h", "h", {1, 2, INFINITY}));
}

TEST_CASE("format_metric_value writes numbers as Prometheus reads them", "[agent]") {
  CHECK(format_metric_value(0) == "0");
  CHECK(format_metric_value(-0.0) == "0");
  CHECK(format_metric_value(3) == "3");
  CHECK(format_metric_value(-42) == "-42");
  CHECK(format_metric_value(123456789012.0) == "123456789012");
  CHECK(format_metric_value(1e20) == "100000000000000000000");
  CHECK(format_metric_value(1e21) == "1e+21");
  CHECK(format_metric_value(0.1) == "0.1");
  CHECK(format_metric_value(2.5) == "2.5");
  CHECK(format_metric_value(1.0 / 3) == "0.3333333333333333");
  CHECK(format_metric_value(1e-7) == "1e-07");
  CHECK(format_metric_value(INFINITY) == "+Inf");
  CHECK(format_metric_value(-INFINITY) == "-Inf");
  CHECK(format_metric_value(NAN) == "NaN");
}

TEST_CASE("Histogram counts observations into cumulative buckets", "[agent]") {
  Histogram h({1, 2, 5});
  CHECK(h.upper_bounds() == std::vector<double>{1, 2, 5});
  for (double v : {0.5, 1.0, 1.5, 2.0, 3.0, 7.0, -1.0}) h.observe(v);
  Histogram::Snapshot s = h.snapshot();
  CHECK(s.cumulative == std::vector<std::uint64_t>{3, 5, 6, 7});
  CHECK(s.count == 7);
  CHECK(s.sum == 14);
  h.observe(NAN);
  s = h.snapshot();
  CHECK(s.cumulative == std::vector<std::uint64_t>{3, 5, 6, 8});
  CHECK(std::isnan(s.sum));

  MetricsRegistry r;
  r.histogram("lat_seconds", "Latency.", {0.5}, {{"path", "/x"}}).observe(0.5);
  CHECK(r.render() ==
        "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
        "lat_seconds_bucket{path=\"/x\",le=\"0.5\"} 1\n"
        "lat_seconds_bucket{path=\"/x\",le=\"+Inf\"} 1\n"
        "lat_seconds_sum{path=\"/x\"} 0.5\n"
        "lat_seconds_count{path=\"/x\"} 1\n");
}

TEST_CASE("Histogram bounds must be increasing numbers", "[agent]") {
  CHECK_THROWS_AS(Histogram({1, 1}), std::invalid_argument);
  CHECK_THROWS_AS(Histogram({2, 1}), std::invalid_argument);
  CHECK_THROWS_AS(Histogram({1, NAN}), std::invalid_argument);
  CHECK(Histogram({}).snapshot().cumulative.size() == 1);
  CHECK(Histogram({1, INFINITY}).upper_bounds() == std::vector<double>{1});
}

TEST_CASE("MetricsRegistry rejects invalid metric and label names", "[agent]") {
  MetricsRegistry r;
  for (const char* name : {"", "1abc", "a-b", "a b", "a.b", "é"}) {
    CAPTURE(name);
    CHECK_THROWS_AS(r.counter(name, "h"), std::invalid_argument);
  }
  for (const char* label : {"", "__reserved", "1a", "a:b", "a-b"}) {
    CAPTURE(label);
    CHECK_THROWS_AS(r.gauge("g", "h", {{label, "v"}}), std::invalid_argument);
  }
  CHECK_THROWS_AS(r.gauge("g", "h", {{"a", "1"}, {"a", "2"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("h", "h", {1}, {{"le", "1"}}), std::invalid_argument);
  CHECK_NOTHROW(r.counter("ns:sub_total9", "h", {{"_x", "v"}, {"le", "ok on a counter"}}));
  CHECK_NOTHROW(r.counter("_x", "h"));
  CHECK_THROWS_AS(r.counter("c_total", "h").inc(-1), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("c_total", "h").inc(NAN), std::invalid_argument);
}

TEST_CASE("MetricsRegistry refuses a family registered again differently", "[agent]") {
  MetricsRegistry r;
  r.counter("x", "help");
  CHECK_THROWS_AS(r.gauge("x", "help"), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("x", "help", {1}), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("x", "other help"), std::invalid_argument);
  r.histogram("h", "help", {1, 2});
  CHECK_THROWS_AS(r.histogram("h", "help", {1, 3}, {{"a", "b"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("h_count", "help"), std::invalid_argument);
  CHECK_THROWS_AS(r.gauge("h_bucket", "help"), std::invalid_argument);
  r.counter("k_sum", "help");
  CHECK_THROWS_AS(r.histogram("k", "help", {1}), std::invalid_argument);
  // Nothing half-registered by the failures.
  CHECK(r.render() ==
        "# HELP h help\n# TYPE h histogram\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"2\"} 0\nh_bucket{le=\"+Inf\"} 0\n"
        "h_sum 0\nh_count 0\n# HELP k_sum help\n# TYPE k_sum counter\nk_sum 0\n# HELP x help\n# TYPE x counter\nx 0\n");
}

TEST_CASE("MetricsRegistry sums updates from several threads while rendering", "[agent]") {
  MetricsRegistry r;
  constexpr int kThreads = 4, kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&r, t] {
      auto& c = r.counter("ops_total", "h");
      auto& g = r.gauge("level", "h");
      auto& h = r.histogram("d", "h", {0.5});
      auto& mine = r.counter("per_thread_total", "h", {{"t", std::to_string(t)}});
      for (int i = 0; i < kIncrements; ++i) {
        c.inc();
        g.inc(2);
        g.dec();
        h.observe(i % 2);
        mine.inc(0.5);
      }
    });
  }
  std::thread renderer([&r] {
    for (int i = 0; i < 50; ++i) CHECK(r.render().size() < 100000);
  });
  for (auto& t : threads) t.join();
  renderer.join();
  CHECK(r.counter("ops_total", "h").value() == kThreads * kIncrements);
  CHECK(r.gauge("level", "h").value() == kThreads * kIncrements);
  auto s = r.histogram("d", "h", {0.5}).snapshot();
  CHECK(s.count == kThreads * kIncrements);
  CHECK(s.cumulative[0] == kThreads * kIncrements / 2);
  CHECK(s.sum == kThreads * kIncrements / 2);
  for (int t = 0; t < kThreads; ++t)
    CHECK(r.counter("per_thread_total", "h", {{"t", std::to_string(t)}}).value() == kIncrements / 2);
}

TEST_CASE("AgentMetrics registers every family of the agent at zero", "[agent]") {
  MetricsRegistry r;
  AgentMetrics m(r);
  std::string text = r.render();
  for (const char* line : {
           "# TYPE manifold_agent_attachments_added_total counter\nmanifold_agent_attachments_added_total 0\n",
           "# TYPE manifold_agent_attachments_removed_total counter\nmanifold_agent_attachments_removed_total 0\n",
           "# TYPE manifold_agent_attachments_failed_total counter\n"
           "manifold_agent_attachments_failed_total{operation=\"attach\"} 0\n"
           "manifold_agent_attachments_failed_total{operation=\"detach\"} 0\n",
           "# TYPE manifold_agent_reconcile_duration_seconds histogram\n"
           "manifold_agent_reconcile_duration_seconds_bucket{le=\"0.001\"} 0\n"
           "manifold_agent_reconcile_duration_seconds_bucket{le=\"0.0025\"} 0\n",
           "manifold_agent_reconcile_duration_seconds_bucket{le=\"5\"} 0\n"
           "manifold_agent_reconcile_duration_seconds_bucket{le=\"10\"} 0\n"
           "manifold_agent_reconcile_duration_seconds_bucket{le=\"+Inf\"} 0\n"
           "manifold_agent_reconcile_duration_seconds_sum 0\n"
           "manifold_agent_reconcile_duration_seconds_count 0\n",
           "# TYPE manifold_agent_reconciles_total counter\n"
           "manifold_agent_reconciles_total{result=\"changed\"} 0\n"
           "manifold_agent_reconciles_total{result=\"failed\"} 0\n"
           "manifold_agent_reconciles_total{result=\"invalid\"} 0\n"
           "manifold_agent_reconciles_total{result=\"unchanged\"} 0\n",
           "# TYPE manifold_agent_watch_restarts_total counter\n"
           "manifold_agent_watch_restarts_total{reason=\"closed\"} 0\n"
           "manifold_agent_watch_restarts_total{reason=\"empty\"} 0\n"
           "manifold_agent_watch_restarts_total{reason=\"error\"} 0\n"
           "manifold_agent_watch_restarts_total{reason=\"expired\"} 0\n",
           "# TYPE manifold_agent_pods_tracked gauge\nmanifold_agent_pods_tracked 0\n",
           "# TYPE manifold_agent_sandboxes_tracked gauge\nmanifold_agent_sandboxes_tracked 0\n",
           "# TYPE manifold_agent_api_requests_total counter\nmanifold_agent_api_requests_total 0\n",
           "# TYPE manifold_agent_api_throttled_total counter\nmanifold_agent_api_throttled_total 0\n",
       }) {
    CHECK_THAT(text, Catch::Contains(line));
  }
  std::size_t families = 0;
  for (std::size_t at = 0; (at = text.find("# TYPE ", at)) != std::string::npos; ++at) ++families;
  CHECK(families == 10);
  CHECK(m.reconcile_duration.upper_bounds().size() == 13);

  m.attach_failed.inc();
  m.reconciles_changed.inc();
  m.pods_tracked.set(7);
  m.reconcile_duration.observe(0.003);
  AgentMetrics again(r);  // the same objects
  CHECK(&again.attach_failed == &m.attach_failed);
  text = r.render();
  CHECK_THAT(text, Catch::Contains("manifold_agent_attachments_failed_total{operation=\"attach\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("manifold_agent_reconciles_total{result=\"changed\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("manifold_agent_pods_tracked 7\n"));
  CHECK_THAT(text, Catch::Contains("manifold_agent_reconcile_duration_seconds_bucket{le=\"0.0025\"} 0\n"
                                   "manifold_agent_reconcile_duration_seconds_bucket{le=\"0.005\"} 1\n"));
}

TEST_CASE("RelayMetrics counts the relay's exchanges by result, registered at zero", "[agent]") {
  MetricsRegistry r;
  RelayMetrics m(r);
  CHECK_THAT(r.render(), Catch::Contains("manifold_agent_relay_exchanges_total{result=\"answered\"} 0\n"
                                         "manifold_agent_relay_exchanges_total{result=\"refused\"} 0\n"));
  manifold::relay::RelayCounters& counters = m;
  counters.answered();
  counters.answered();
  counters.refused();
  CHECK_THAT(r.render(), Catch::Contains("manifold_agent_relay_exchanges_total{result=\"answered\"} 2\n"
                                         "manifold_agent_relay_exchanges_total{result=\"refused\"} 1\n"));
}
