// The peers the node agent's MultiNetworkPolicy sync chooses from: every pod of the cluster that has
// an IP on a NetworkAttachmentDefinition's network, and every namespace with its labels — kept
// small, because at cluster scale this is most of the agent's memory. A pod is its namespace and
// name, its labels packed in one string, and its IPs per network (network names interned: there
// are few); a pod whose network-status lists no IP on a NAD's network ("ns/name") is not kept at
// all, since it can never be a peer. world() materializes, for one network, only the pods a
// caller's filter accepts (the ones some policy's selectors may choose), as policy::PeerWorld.
// Relists replace the whole set: begin_relist() marks every entry stale, put_*() refreshes, and
// end_relist() drops what the new list no longer holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/evaluate.h"
#include "policy/label_selector.h"
#include "util/ip.h"

namespace manifold::policysync {

/// IPs per network ("ns/name"), as read from a network-status annotation.
using IpsByNetwork = std::map<std::string, std::vector<util::IpAddress>, std::less<>>;

/// The compact store of peer pods and namespaces.
class PeerIndex {
 public:
  /// Whether a pod (namespace, labels as pack_labels packs them) may be a peer of some current
  /// policy; the labels are packed so that a filter that decides on the namespace unpacks nothing.
  using PodFilter = std::function<bool(std::string_view ns, std::string_view packed_labels)>;

  /// Stores (or replaces) pod `ns`/`name`; forgets it when it has no IP on a NAD's network.
  /// Returns true when what is stored changed.
  bool put_pod(const std::string& ns, const std::string& name, const policy::Labels& labels, const IpsByNetwork& ips);
  /// Forgets a pod; true when it was known.
  bool remove_pod(std::string_view ns, std::string_view name);
  /// Stores (or replaces) a namespace's labels; true when they changed.
  bool put_namespace(const std::string& name, const policy::Labels& labels);
  /// Forgets a namespace; true when it was known.
  bool remove_namespace(std::string_view name);

  /// Marks every pod (or namespace) stale until it is put again.
  void begin_pods_relist();
  /// Drops the pods not put since begin_pods_relist(); true when any was dropped.
  bool end_pods_relist();
  /// As begin_pods_relist, for namespaces.
  void begin_namespaces_relist();
  /// As end_pods_relist, for namespaces.
  bool end_namespaces_relist();

  /// Forgets every pod (their view stopped).
  void clear_pods() { pods_ = {}; }
  /// Forgets every namespace (their view stopped).
  void clear_namespaces() { namespaces_.clear(); }

  /// The peers on `network`: every namespace, and the pods with an IP there that `filter` accepts.
  policy::PeerWorld world(std::string_view network, const PodFilter& filter) const;
  /// The labels of namespace `name` (nullptr when unknown).
  const policy::Labels* namespace_labels(std::string_view name) const;

  /// Pods kept.
  std::size_t pods() const { return pods_.size(); }
  /// Namespaces kept.
  std::size_t namespaces() const { return namespaces_.size(); }

 private:
  struct NetworkIp {
    std::uint32_t network;  ///< index into networks_
    util::IpAddress ip;
    bool operator==(const NetworkIp&) const = default;
  };
  struct Pod {
    std::string labels;          ///< "k=v\n" per label, sorted by key
    std::vector<NetworkIp> ips;  ///< by network, in network-status order
    bool fresh = true;           ///< put since the last begin_pods_relist()
  };
  struct Namespace {
    policy::Labels labels;
    bool fresh = true;
  };

  std::uint32_t network_id(const std::string& network);

  std::unordered_map<std::string, Pod> pods_;  ///< by "ns/name"
  std::map<std::string, Namespace, std::less<>> namespaces_;
  std::vector<std::string> networks_;  ///< interned network names
  std::unordered_map<std::string, std::uint32_t> network_ids_;
};

/// `labels` packed as PeerIndex keeps them ("k=v\n" per label, in key order).
std::string pack_labels(const policy::Labels& labels);

/// The labels of a packed string.
policy::Labels unpack_labels(std::string_view packed);

}  // namespace manifold::policysync
