// Names for the firewall module's family and backend enums, and the node's binary names derived
// from them (`<iptables|ip6tables>-<legacy|nft>-<save|restore>`).
#include "firewall/iptables_types.h"

namespace manifold::firewall {

namespace {

std::string binary_name(Family family, Backend backend, std::string_view verb) {
  std::string name = family == Family::V4 ? "iptables-" : "ip6tables-";
  name += backend_name(backend);
  name += '-';
  name += verb;
  return name;
}

}  // namespace

std::string_view family_name(Family family) { return family == Family::V4 ? "IPv4" : "IPv6"; }

std::string_view backend_name(Backend backend) { return backend == Backend::Legacy ? "legacy" : "nft"; }

std::string_view table_name(Table table) { return table == Table::Nat ? "nat" : "filter"; }

std::optional<Backend> parse_backend(std::string_view text) {
  if (text == "legacy") return Backend::Legacy;
  if (text == "nft") return Backend::Nft;
  return std::nullopt;
}

std::string restore_binary_name(Family family, Backend backend) { return binary_name(family, backend, "restore"); }

std::string save_binary_name(Family family, Backend backend) { return binary_name(family, backend, "save"); }

}  // namespace manifold::firewall
