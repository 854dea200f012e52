// Implementation of the compact peer store: packing, interning, relists and per-network worlds.
#include "policysync/peer_index.h"

namespace manifold::policysync {

std::string pack_labels(const policy::Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    out += key;
    out += '=';
    out += value;
    out += '\n';
  }
  return out;
}

policy::Labels unpack_labels(std::string_view packed) {
  policy::Labels out;
  while (!packed.empty()) {
    const std::size_t end = packed.find('\n');
    const std::string_view line = packed.substr(0, end);
    const std::size_t eq = line.find('=');  // keys never hold '=': qualified names
    out.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    if (end == std::string_view::npos) break;
    packed.remove_prefix(end + 1);
  }
  return out;
}

std::uint32_t PeerIndex::network_id(const std::string& network) {
  const auto it = network_ids_.find(network);
  if (it != network_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(networks_.size());
  networks_.push_back(network);
  network_ids_.emplace(network, id);
  return id;
}

bool PeerIndex::put_pod(const std::string& ns, const std::string& name, const policy::Labels& labels,
                        const IpsByNetwork& ips) {
  std::vector<NetworkIp> kept;
  for (const auto& [network, list] : ips) {
    if (network.find('/') == std::string::npos) continue;  // the cluster network: never a policy's
    for (const util::IpAddress& ip : list) kept.push_back({network_id(network), ip});
  }
  const std::string key = ns + "/" + name;
  if (kept.empty()) return remove_pod(ns, name);
  Pod pod{pack_labels(labels), std::move(kept), true};
  pod.ips.shrink_to_fit();
  auto [it, inserted] = pods_.try_emplace(key);
  const bool changed = inserted || it->second.labels != pod.labels || it->second.ips != pod.ips;
  it->second = std::move(pod);
  return changed;
}

bool PeerIndex::remove_pod(std::string_view ns, std::string_view name) {
  std::string key(ns);
  key += '/';
  key += name;
  return pods_.erase(key) != 0;
}

bool PeerIndex::put_namespace(const std::string& name, const policy::Labels& labels) {
  auto [it, inserted] = namespaces_.try_emplace(name);
  const bool changed = inserted || it->second.labels != labels;
  it->second = Namespace{labels, true};
  return changed;
}

bool PeerIndex::remove_namespace(std::string_view name) {
  const auto it = namespaces_.find(name);
  if (it == namespaces_.end()) return false;
  namespaces_.erase(it);
  return true;
}

void PeerIndex::begin_pods_relist() {
  for (auto& [key, pod] : pods_) pod.fresh = false;
}

bool PeerIndex::end_pods_relist() {
  const std::size_t before = pods_.size();
  std::erase_if(pods_, [](const auto& entry) { return !entry.second.fresh; });
  return pods_.size() != before;
}

void PeerIndex::begin_namespaces_relist() {
  for (auto& [name, ns] : namespaces_) ns.fresh = false;
}

bool PeerIndex::end_namespaces_relist() {
  const std::size_t before = namespaces_.size();
  std::erase_if(namespaces_, [](const auto& entry) { return !entry.second.fresh; });
  return namespaces_.size() != before;
}

const policy::Labels* PeerIndex::namespace_labels(std::string_view name) const {
  const auto it = namespaces_.find(name);
  return it == namespaces_.end() ? nullptr : &it->second.labels;
}

policy::PeerWorld PeerIndex::world(std::string_view network, const PodFilter& filter) const {
  policy::PeerWorld out;
  for (const auto& [name, ns] : namespaces_) out.namespaces.emplace(name, ns.labels);
  const auto id = network_ids_.find(std::string(network));
  if (id == network_ids_.end()) return out;
  for (const auto& [key, pod] : pods_) {
    bool on_network = false;
    for (const NetworkIp& n : pod.ips) on_network = on_network || n.network == id->second;
    if (!on_network) continue;
    const std::size_t slash = key.find('/');
    const std::string_view ns = std::string_view(key).substr(0, slash);
    if (filter && !filter(ns, pod.labels)) continue;
    policy::PodView view;
    view.ns = std::string(ns);
    view.name = key.substr(slash + 1);
    view.labels = unpack_labels(pod.labels);
    for (const NetworkIp& n : pod.ips)
      if (n.network == id->second) view.ips[networks_[n.network]].push_back(n.ip);
    out.pods.push_back(std::move(view));
  }
  return out;
}

}  // namespace manifold::policysync
