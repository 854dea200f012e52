// Implementation of CHECK's peer listing: the queries the selectors need, each listed once, paged,
// metadata only; pods without an IP on the network dropped at once.
#include "engine/policy_peers.h"

#include <set>
#include <string>
#include <utility>

#include "policy/pod_view.h"
#include "policy/policy_error.h"
#include "util/log.h"
#include "util/quote.h"

namespace manifold::engine {

namespace {

constexpr int kPageSize = 500;
constexpr const char* kListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

// A selector's matchLabels as a label selector query (the rest is matched here, by evaluate).
std::string label_query(const std::optional<policy::LabelSelector>& selector) {
  if (!selector || selector->match_labels.empty()) return {};
  std::string text;
  for (const auto& [key, value] : selector->match_labels) text += (text.empty() ? "" : ",") + key + "=" + value;
  return "labelSelector=" + util::percent_encode(text, "-._~");
}

// Every item of a paged, metadata-only LIST of `collection` with `query`.
template <typename F>
void list_all(KubeAccess& kube, const char* resource, const std::string& collection, const std::string& query,
              F&& each) {
  std::string token;
  do {
    Json page = kube.list_page(resource, collection, query, "PartialObjectMetadataList", kListAccept, kPageSize, token);
    for (const Json& item : page["items"]) each(item);
    token = json_string_at(page, {"metadata", "continue"});
  } while (!token.empty());
}

}  // namespace

policy::PeerWorld list_policy_peers(KubeAccess& kube, const std::vector<policy::MultiNetworkPolicy>& policies,
                                    std::string_view network) {
  std::set<std::pair<std::string, std::string>> queries;  // collection, query
  bool namespaces = false;
  for (const policy::MultiNetworkPolicy& p : policies) {
    if (!p.valid() || !p.covers(network)) continue;
    for (const auto* rules : {&p.ingress_rules, &p.egress_rules})
      for (const policy::PolicyRule& rule : *rules)
        for (const policy::PolicyPeer& peer : rule.peers) {
          if (peer.ip_block) continue;
          namespaces = namespaces || peer.namespace_selector.has_value();
          queries.emplace(peer.namespace_selector ? "/api/v1/pods" : "/api/v1/namespaces/" + p.ns + "/pods",
                          label_query(peer.pod_selector));
        }
  }
  policy::PeerWorld world;
  if (namespaces)
    list_all(kube, "namespaces", "/api/v1/namespaces", "", [&](const Json& item) {
      try {
        world.namespaces.insert(policy::read_namespace(item));
      } catch (const policy::PolicyError& e) {
        util::log_warning("MultiNetworkPolicy peers: ignoring a namespace: ", e.what());
      }
    });
  std::set<std::string> seen;
  for (const auto& [collection, query] : queries)
    list_all(kube, "pods", collection, query, [&](const Json& item) {
      try {
        policy::PodView view = policy::read_pod_view(item);
        if (view.ips_on(network).empty() || !seen.insert(view.id()).second) return;
        world.pods.push_back(std::move(view));
      } catch (const policy::PolicyError& e) {
        util::log_warning("MultiNetworkPolicy peers: ignoring a pod: ", e.what());
      }
    });
  return world;
}

}  // namespace manifold::engine
