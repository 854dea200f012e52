// Test fixtures of the agent's lookup caches: pods as the watch delivers them, and a NAD lister
// standing in for the API server (its NADs, its resourceVersion, LISTs it can hold back or fail).
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "k8s/pod.h"
#include "util/json.h"

namespace manifold::test {

/// A pod of node `node` as a watch event carries it.
inline k8s::Pod watched_pod(const std::string& ns, const std::string& name, const std::string& uid,
                            const std::string& rv, const std::string& node = "node1", Json annotations = nullptr) {
  Json meta = {{"namespace", ns}, {"name", name}, {"uid", uid}, {"resourceVersion", rv}};
  if (!annotations.is_null()) meta["annotations"] = std::move(annotations);
  return k8s::decode_pod(
      Json{{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", meta}, {"spec", {{"nodeName", node}}}});
}

/// The API server's NADs of every namespace, listed as it would: one resourceVersion counter for all
/// writes. LISTs can be held back (hold()) and released, or made to fail. Thread-safe.
class FakeNadServer {
 public:
  /// Creates or changes a NAD; the counter moves on. Returns the write's resourceVersion.
  std::uint64_t put(const std::string& ns, const std::string& name, const std::string& config) {
    std::lock_guard lock(mu_);
    nads_[ns][name] = config;
    return ++rv_;
  }
  /// Any other write (a pod created or bound): the counter moves on. Returns its resourceVersion.
  std::uint64_t write() {
    std::lock_guard lock(mu_);
    return ++rv_;
  }
  /// LISTs wait until release().
  void hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  /// Lets held LISTs go.
  void release() {
    {
      std::lock_guard lock(mu_);
      held_ = false;
    }
    cv_.notify_all();
  }
  /// LISTs fail (true) or answer (false).
  void fail(bool f) {
    std::lock_guard lock(mu_);
    fail_ = f;
  }
  /// The resourceVersion LISTs report, as given ("" = the counter).
  void list_rv(std::string rv) {
    std::lock_guard lock(mu_);
    list_rv_ = std::move(rv);
  }
  /// LISTs started so far.
  int lists() {
    std::lock_guard lock(mu_);
    return lists_;
  }
  /// LISTs waiting in hold().
  int waiting() {
    std::lock_guard lock(mu_);
    return waiting_;
  }
  /// Waits until `n` LISTs are held back.
  void wait_for_held(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }
  /// The lister the NAD cache calls.
  Json list(const std::string& ns) {
    std::unique_lock lock(mu_);
    ++lists_;
    // The read happens when the request arrives; a held LIST answers with what it read then.
    Json items = Json::array();
    for (const auto& [name, config] : nads_[ns])
      items.push_back({{"apiVersion", "k8s.cni.cncf.io/v1"},
                       {"kind", "NetworkAttachmentDefinition"},
                       {"metadata", {{"namespace", ns}, {"name", name}}},
                       {"spec", {{"config", config}}}});
    std::string rv = list_rv_.empty() ? std::to_string(rv_) : list_rv_;
    const bool fail = fail_;
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_; });
    --waiting_;
    if (fail) throw std::runtime_error("the API server is unavailable");
    return {{"kind", "NetworkAttachmentDefinitionList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::map<std::string, std::string>> nads_;
  std::uint64_t rv_ = 1000;
  std::string list_rv_;
  bool held_ = false, fail_ = false;
  int lists_ = 0, waiting_ = 0;
};

}  // namespace manifold::test
