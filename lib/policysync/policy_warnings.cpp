// Implementation of the policy sync's Warning events: grouping per pod and policy, the message ADD
// writes, and telling each once.
#include "policysync/policy_warnings.h"

#include <algorithm>

#include "engine/pod_status.h"
#include "engine/policy_step.h"
#include "util/log.h"

namespace manifold::policysync {

namespace {

constexpr std::size_t kMaxEventMessage = 1024;  // what events.k8s.io accepts as a note

}  // namespace

void PolicyWarnings::set_pod(const std::string& ns, const std::string& name, std::string uid,
                             std::string resource_version) {
  pods_[{ns, name}] = {std::move(uid), std::move(resource_version)};
}

void PolicyWarnings::remove_pod(const std::string& ns, const std::string& name) { pods_.erase({ns, name}); }

std::vector<Json> PolicyWarnings::take(const std::vector<InvalidPolicy>& invalid) {
  std::map<std::pair<std::pair<std::string, std::string>, std::string>, std::vector<std::string>> grouped;
  for (const InvalidPolicy& i : invalid) {
    auto& where = grouped[{{i.pod_ns, i.pod_name}, i.error}];
    if (std::find(where.begin(), where.end(), i.where) == where.end()) where.push_back(i.where);
  }
  std::set<std::string> current;
  std::vector<Json> events;
  for (const auto& [key, wheres] : grouped) {
    const auto& [pod, error] = key;
    std::string where;
    for (const std::string& w : wheres) where += (where.empty() ? "" : ", ") + w;
    std::string message = "MultiNetworkPolicy " + error + "; until it is fixed it isolates " + where +
                          " in both directions and allows nothing there";
    if (message.size() > kMaxEventMessage) message = message.substr(0, kMaxEventMessage - 3) + "...";
    const std::string id = pod.first + "/" + pod.second + "\n" + message;
    const auto identity = pods_.find(pod);
    if (identity == pods_.end()) continue;  // told once its identity is known
    current.insert(id);
    if (told_.count(id) != 0) continue;
    util::log_warning("pod ", pod.first, "/", pod.second, ": ", message);
    const cni::PodRef ref{pod.first, pod.second, identity->second.first, ""};
    k8s::Pod subject;
    subject.namespace_ = pod.first;
    subject.name = pod.second;
    subject.uid = identity->second.first;
    subject.resource_version = identity->second.second;
    Json event = engine::pod_event(ref, subject, engine::kInvalidPolicyReason, "Warning");
    event["metadata"]["name"] = engine::event_name(ref, events.size());
    event["message"] = message;
    events.push_back(std::move(event));
  }
  told_ = std::move(current);
  return events;
}

}  // namespace manifold::policysync
