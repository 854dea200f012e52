// The one internal CNI Result model. Every delegate result, whatever spec version it was printed
// in, is decoded into this shape (the CNI 1.1.0 result: interfaces, ips, routes, dns) and encoded
// back into the caller's version only at the edge (see cni/result_codec.h). Addresses are kept as
// canonical text so the model is trivially copyable, comparable and cacheable. This file also holds
// the small pure operations on results the meta-plugin needs: merging and default gateways.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace manifold::cni {

/// An interface created by an attachment (host-side or in the sandbox).
struct Interface {
  std::string name;
  std::string mac;          ///< "" if none
  std::optional<int> mtu;   ///< 1.1.0 field; nullopt if unknown
  std::string sandbox;      ///< netns path for sandbox interfaces, "" for host interfaces
  std::string socket_path;  ///< 1.1.0 field, "" if none
  std::string pci_id;       ///< 1.1.0 field, "" if none

  bool operator==(const Interface&) const = default;
};

/// An IP address assigned by the attachment.
struct IpConfig {
  std::optional<int> interface;  ///< index into Result::interfaces, nullopt for IPAM results
  std::string address;           ///< CIDR with host bits, e.g. "10.1.2.3/24"
  std::string gateway;           ///< "" if none

  bool operator==(const IpConfig&) const = default;
};

/// A route the attachment installed (or asks to install).
struct Route {
  std::string dst;                                         ///< CIDR, e.g. "0.0.0.0/0"
  std::string gw;                                          ///< "" if none
  std::optional<int> mtu, advmss, priority, table, scope;  ///< 1.1.0-only fields

  bool operator==(const Route&) const = default;
};

/// DNS settings reported by the attachment.
struct Dns {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search, options;

  /// True if no field is set.
  bool empty() const;
  bool operator==(const Dns&) const = default;
};

/// A CNI success result in the internal (1.1.0-shaped) model.
struct Result {
  std::string cni_version;  ///< the version it was decoded from / will be encoded as
  std::vector<Interface> interfaces;
  std::vector<IpConfig> ips;
  std::vector<Route> routes;
  Dns dns;

  bool operator==(const Result&) const = default;
};

/// Merges several results into one (for the opt-in "returnAllResults"): interfaces concatenated,
/// every IP's interface index re-based onto the merged interface list, routes concatenated with
/// exact duplicates dropped, DNS taken from the first result that has any. cni_version of the
/// first. An empty list gives an empty Result.
Result merge_results(const std::vector<Result>& results);

/// Gateways of the default routes (dst 0.0.0.0/0 or ::/0) of a result, in order, deduplicated.
/// Default routes without a gateway contribute nothing.
std::vector<std::string> default_route_gateways(const Result& result);

}  // namespace manifold::cni
