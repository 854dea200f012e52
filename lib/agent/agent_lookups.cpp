// The agent loop's feed of the relay's pod cache (lookup/pod_cache.h): every pod the watch delivers,
// as the loop decoded it, and whether the watch is live. A relist replaces the cache's pods; an
// event or bookmark proves the watch live; a watch that failed, expired or ended at once without
// events leaves it down (every lookup then goes to the API server) until the next list or event.
#include "agent/agent.h"

namespace manifold::agent {

void Agent::publish_relist() {
  if (!lookups_) return;
  std::vector<const k8s::Pod*> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, state] : pods_) pods.push_back(&state.pod);
  lookups_->relisted(pods);
  lookups_->set_live(true);
}

void Agent::publish_pod(const std::string& uid, const k8s::Pod* pod) {
  if (!lookups_) return;
  if (pod)
    lookups_->observe(*pod);
  else if (!uid.empty())
    lookups_->forget(uid);
  lookups_->set_live(true);
}

Agent::WatchEnd Agent::watch_and_publish() {
  const WatchEnd end = watch_once();
  if (lookups_) lookups_->set_live(end == WatchEnd::Resume);
  return end;
}

}  // namespace manifold::agent
