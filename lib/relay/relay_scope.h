// Which pods the node agent's relay acts for: only pods scheduled on its own node. Every call the
// relay serves (relay_policy.h) is about a pod, a namespace or the node: GET a pod and PUT its status
// name the pod; an Event names it as its involvedObject; NAD and ResourceClaim GETs name a namespace;
// the DRA slice list names a node. The rule: a pod is served when the API server says its
// spec.nodeName is this node; a namespace when a pod of it runs on this node; a node only when it is
// this one. What the API server said is remembered for a while (bounded), so a CNI call's later
// exchanges cost no extra request: its pod GET — the first thing it sends — proves the pod and its
// namespace from the GET's own answer. Anything else is refused, and the CNI call then goes directly
// with its own credentials, so a legitimate call never fails for it.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/http.h"

namespace manifold::relay {

/// What an allowlisted request is about.
struct RequestScope {
  enum class Kind { Pod, Namespace, Node };
  Kind kind = Kind::Node;  ///< what must be on this node
  std::string ns;          ///< the namespace (Pod, Namespace)
  std::string name;        ///< the pod (Pod)
};

/// The scope of `request` (one relay_refusal() passed, target under `base_path`) on node `node`, or
/// nothing with `why` set: an Event that is not about a pod of its own namespace, a slice list that
/// does not select this node.
std::optional<RequestScope> scope_of(const http::HttpRequest& request, std::string_view base_path,
                                     std::string_view node, std::string& why);

/// spec.nodeName of the pod in `body` ("" when it has none or is not a JSON object), read without
/// building the document.
std::string pod_node_name(const std::string& body);

/// Which exchanges the relay serves, by what they are about (NodeScope in production).
class RelayScope {
 public:
  virtual ~RelayScope() = default;
  /// Why the exchange of `requests` is refused ("" when it is served); may ask the API server
  /// through `upstream` (requests carrying `authorization` when not "") within `timeout`. Sets
  /// `check_answers` when every answer must pass check_answer() before it is handed out.
  virtual std::string authorize(const std::vector<http::HttpRequest>& requests, http::HttpTransport& upstream,
                                const std::string& authorization, std::chrono::milliseconds timeout,
                                bool& check_answers) = 0;
  /// Why the answer `outcome` to `request` may not be handed out ("" when it may).
  virtual std::string check_answer(const http::HttpRequest& request, const http::BatchOutcome& outcome) = 0;
};

/// The relay's rule "only pods of this node", with what the API server said remembered.
/// Thread-safe.
class NodeScope final : public RelayScope {
 public:
  /// Most pods and namespaces remembered; past it, forgotten all at once.
  static constexpr std::size_t kMaxRemembered = 4096;
  /// Most distinct pods and namespaces one exchange may name (a CNI call names one pod).
  static constexpr std::size_t kMaxNamed = 8;

  /// For node `node` ("" refuses everything), the API server's path prefix `base_path`; what the API
  /// server said is trusted for `ttl`.
  NodeScope(std::string node, std::string base_path, std::chrono::seconds ttl = std::chrono::seconds(120));

  /// Why the exchange of `requests` is refused ("" when it is served). What is not remembered is
  /// asked of the API server through `upstream` (requests carrying `authorization` when not "")
  /// within `timeout` — except for an exchange of pod GETs only: then `check_answers` is set, and
  /// the caller must pass every answer to check_answer() before handing it out.
  std::string authorize(const std::vector<http::HttpRequest>& requests, http::HttpTransport& upstream,
                        const std::string& authorization, std::chrono::milliseconds timeout,
                        bool& check_answers) override;
  /// Why the answer to the pod GET `request` may not be handed out ("" when it is a pod of this
  /// node, which is then remembered).
  std::string check_answer(const http::HttpRequest& request, const http::BatchOutcome& outcome) override;

 private:
  using Clock = std::chrono::steady_clock;
  bool known(const std::map<std::string, Clock::time_point>& seen, const std::string& key);
  void remember(std::map<std::string, Clock::time_point>& seen, const std::string& key);
  std::string verify(const std::vector<RequestScope>& scopes, http::HttpTransport& upstream,
                     const std::string& authorization, std::chrono::milliseconds timeout);

  std::string node_;
  std::string base_path_;
  std::chrono::seconds ttl_;
  std::mutex mu_;
  std::map<std::string, Clock::time_point> pods_;        ///< "ns/name" → until when it is known on this node
  std::map<std::string, Clock::time_point> namespaces_;  ///< ns → until when it is known to have a pod here
};

}  // namespace manifold::relay
