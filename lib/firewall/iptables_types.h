// Small value types shared by the firewall module: the address family an iptables run applies to
// (iptables vs ip6tables), the backend (xtables-legacy vs xtables-nft) and the table (nat, filter),
// with their names and the binary names the node installs for each combination. Kept apart so that
// config, builders, runner and state all speak the same vocabulary without depending on each other.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace manifold::firewall {

/// The address family of one iptables run: `iptables-*` for V4, `ip6tables-*` for V6.
enum class Family { V4 = 4, V6 = 6 };

/// The iptables backend: the xtables-legacy kernel tables or the nf_tables compatibility layer.
enum class Backend { Legacy, Nft };

/// The table a payload or a save is about: nat (the mesh redirect) or filter (network policy).
enum class Table { Nat, Filter };

/// "IPv4" or "IPv6", for messages.
std::string_view family_name(Family family);

/// "legacy" or "nft": the spelling used in config (`iptablesMode`) and in the cached state.
std::string_view backend_name(Backend backend);

/// "nat" or "filter": the name iptables uses (`-t nat`, `*filter`).
std::string_view table_name(Table table);

/// Parses "legacy" or "nft"; nullopt for anything else.
std::optional<Backend> parse_backend(std::string_view text);

/// The restore binary's file name, e.g. "iptables-nft-restore" or "ip6tables-legacy-restore".
std::string restore_binary_name(Family family, Backend backend);

/// The save binary's file name, e.g. "iptables-legacy-save" or "ip6tables-nft-save".
std::string save_binary_name(Family family, Backend backend);

}  // namespace manifold::firewall
