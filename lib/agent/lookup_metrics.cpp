// Implementation of the lookup metrics: the registry finds or creates the labelled counter.
#include "agent/lookup_metrics.h"

#include <string>

namespace manifold::agent {
namespace {

const char* const kLookups = "manifold_agent_lookups_total";
const char* const kLookupsHelp =
    "CNI calls' pod and NAD GETs the relay answered from memory (hit) or forwarded to the API server, by reason";
const char* const kLists = "manifold_agent_nad_lists_total";
const char* const kListsHelp = "LISTs of a namespace's NetworkAttachmentDefinitions that refreshed the NAD cache";

}  // namespace

LookupMetrics::LookupMetrics(MetricsRegistry& registry)
    : registry_(registry),
      lists_ok_(registry.counter(kLists, kListsHelp, {{"result", "ok"}})),
      lists_failed_(registry.counter(kLists, kListsHelp, {{"result", "failed"}})) {}

void LookupMetrics::lookup(std::string_view object, lookup::Verdict verdict, bool waited) {
  const bool hit = verdict == lookup::Verdict::Hit;
  const std::string reason = hit ? (waited ? "waited" : "cached") : lookup::verdict_name(verdict);
  registry_
      .counter(kLookups, kLookupsHelp,
               {{"object", std::string(object)}, {"result", hit ? "hit" : "forwarded"}, {"reason", reason}})
      .inc();
}

}  // namespace manifold::agent
