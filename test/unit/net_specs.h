// Test helpers: addresses, routes and rules written as text in the tests of lib/netlink and
// lib/scoping (unit and root integration suites alike). Routes and rules hold typed addresses; these
// builders parse the text a test writes ("" meaning "none") so a test reads like `ip route`.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "netlink/route.h"
#include "netlink/rule.h"
#include "util/ip.h"

namespace manifold::test {

/// The address `text`; throws std::invalid_argument when it is not one (a broken test).
inline util::IpAddress ip(std::string_view text) {
  const std::optional<util::IpAddress> out = util::parse_ip(text);
  if (!out) throw std::invalid_argument("test: not an IP address: " + std::string(text));
  return *out;
}

/// The prefix `text` ("address/length", or a bare address: its host prefix); throws
/// std::invalid_argument when it is not one.
inline util::IpPrefix cidr(std::string_view text) {
  const std::optional<util::IpPrefix> out = util::parse_ip_or_cidr(text);
  if (!out) throw std::invalid_argument("test: not an IP prefix: " + std::string(text));
  return *out;
}

/// ip(text), or nullopt for "".
inline std::optional<util::IpAddress> opt_ip(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return ip(text);
}

/// cidr(text), or nullopt for "".
inline std::optional<util::IpPrefix> opt_cidr(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return cidr(text);
}

/// Canonical text of an optional address or prefix, "" for nullopt.
template <class T>
std::string text(const std::optional<T>& value) {
  return value ? value->str() : std::string();
}

/// The route "dst via gw dev #ifindex table table" ("" dst: default; "" gw: none).
inline netlink::RouteSpec route(std::string_view dst, std::string_view gw, int ifindex,
                                int table = netlink::kMainTable) {
  netlink::RouteSpec r;
  r.dst = opt_cidr(dst);
  r.gw = opt_ip(gw);
  r.ifindex = ifindex;
  r.table = table;
  return r;
}

/// The rule "priority: from src lookup table" ("" src: from all; family 0: derived from src).
inline netlink::RuleSpec rule(std::string_view src, int table, int priority, int family = 0) {
  netlink::RuleSpec r;
  r.family = family;
  r.src = opt_cidr(src);
  r.table = table;
  r.priority = priority;
  return r;
}

}  // namespace manifold::test
