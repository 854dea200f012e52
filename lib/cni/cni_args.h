// CNI_ARGS: the runtime's "K1=V1;K2=V2" string. Parsed into ordered pairs, validated for size and
// shape, looked up by key (Kubernetes pod identity lives here), and rebuilt with manifold's own
// additions (IP=, MAC=) for delegates.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace manifold::cni {

/// Parsed CNI_ARGS, in the order given.
class CniArgs {
 public:
  /// Parses "K=V;K2=V2". Empty input is valid (no args). Throws CniError(InvalidEnv) for a pair
  /// without '=', an empty key, a key or value with control characters, or more than 64 KiB in all.
  static CniArgs parse(std::string_view text);

  /// The value of the last pair with `key`, if any.
  std::optional<std::string> get(std::string_view key) const;
  /// Sets `key` (replacing every existing pair with that key, keeping the first position).
  void set(const std::string& key, const std::string& value);
  /// A copy without the pairs whose key is one of `keys` (the others keep their order).
  CniArgs without(std::initializer_list<std::string_view> keys) const;
  /// All pairs.
  const std::vector<std::pair<std::string, std::string>>& pairs() const { return pairs_; }
  /// Renders "K=V;K2=V2".
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

/// Kubernetes pod identity from CNI_ARGS (empty strings when absent).
struct PodRef {
  std::string namespace_;       ///< K8S_POD_NAMESPACE
  std::string name;             ///< K8S_POD_NAME
  std::string uid;              ///< K8S_POD_UID
  std::string infra_container;  ///< K8S_POD_INFRA_CONTAINER_ID
  /// True when both namespace and name are known.
  bool known() const { return !namespace_.empty() && !name.empty(); }
};

/// Extracts the K8S_POD_* values.
PodRef pod_ref_from(const CniArgs& args);

/// CNI_ARGS for a delegate: the runtime's args, `IgnoreUnknown=true` first when there are any args
/// and it is missing, then `extra` pairs (e.g. IP=, MAC=) replacing same-named ones.
std::string delegate_cni_args(const CniArgs& runtime_args,
                              const std::vector<std::pair<std::string, std::string>>& extra);

}  // namespace manifold::cni
