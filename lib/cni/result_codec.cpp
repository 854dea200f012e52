// Implementation of the result codec: strict, path-naming decoding of every result shape into the
// internal model, and encoding of the model into every spec version's shape.
#include "cni/result_codec.h"

#include <climits>
#include <cstdint>

#include "cni/error.h"
#include "cni/version.h"
#include "util/ip.h"
#include "util/quote.h"
#include "util/json_error.h"

namespace manifold::cni {

namespace {

constexpr std::size_t kMaxResultBytes = 4u << 20;  // far beyond any real result
constexpr int kMaxJsonDepth = 32;                  // a result nests 4 levels deep
constexpr std::size_t kMaxQuoted = 64;             // offending values quoted in errors

// ---- error helpers ----------------------------------------------------------------------------

// Quotes a value for an error message: truncated, non-printable bytes escaped.
std::string quote(std::string_view s) { return util::quote_bytes(s, kMaxQuoted); }

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw CniError(ErrorCode::Decoding, "invalid CNI result: " + path + ": " + problem);
}

[[noreturn]] void fail_encode(const std::string& path, const std::string& problem) {
  throw CniError(ErrorCode::Internal, "cannot encode CNI result: " + path + ": " + problem);
}

std::string sub(const std::string& path, const char* key) { return path.empty() ? std::string(key) : path + "." + key; }

std::string at(const std::string& path, std::size_t index) { return path + "[" + std::to_string(index) + "]"; }

// ---- typed field readers (absent and null are the same, as in Go) -----------------------------

const Json* member(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void expect(const Json& v, bool ok, const std::string& path, const char* what) {
  if (!ok) fail(path, std::string("expected ") + what + ", got " + v.type_name());
}

std::string opt_string(const Json& obj, const char* key, const std::string& path) {
  const Json* v = member(obj, key);
  if (!v) return {};
  expect(*v, v->is_string(), sub(path, key), "a string");
  return v->get<std::string>();
}

std::optional<int> opt_int(const Json& obj, const char* key, const std::string& path, int min, int max) {
  const Json* v = member(obj, key);
  if (!v) return std::nullopt;
  const std::string p = sub(path, key);
  expect(*v, v->is_number_integer(), p, "an integer");
  std::int64_t n = 0;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max)) fail(p, std::to_string(u) + " is out of range");
    n = static_cast<std::int64_t>(u);
  } else {
    n = v->get<std::int64_t>();
  }
  if (n < min || n > max)
    fail(p, std::to_string(n) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return static_cast<int>(n);
}

// Like Go's `int` with omitempty: 0 reads as unset.
std::optional<int> opt_nonzero_int(const Json& obj, const char* key, const std::string& path, int max) {
  auto v = opt_int(obj, key, path, 0, max);
  if (v && *v == 0) return std::nullopt;
  return v;
}

const Json* opt_array(const Json& obj, const char* key, const std::string& path) {
  const Json* v = member(obj, key);
  if (v) expect(*v, v->is_array(), sub(path, key), "an array");
  return v;
}

const Json* opt_object(const Json& obj, const char* key, const std::string& path) {
  const Json* v = member(obj, key);
  if (v) expect(*v, v->is_object(), sub(path, key), "an object");
  return v;
}

std::vector<std::string> opt_string_list(const Json& obj, const char* key, const std::string& path) {
  std::vector<std::string> out;
  const Json* arr = opt_array(obj, key, path);
  if (!arr) return out;
  const std::string p = sub(path, key);
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const Json& v = (*arr)[i];
    expect(v, v.is_string(), at(p, i), "a string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// A required CIDR field, returned canonical.
util::IpPrefix req_cidr(const Json& obj, const char* key, const std::string& path) {
  const std::string p = sub(path, key);
  const Json* v = member(obj, key);
  if (!v) fail(p, "missing");
  expect(*v, v->is_string(), p, "a string");
  auto prefix = util::parse_cidr(v->get_ref<const std::string&>());
  if (!prefix) fail(p, quote(v->get_ref<const std::string&>()) + " is not a valid CIDR");
  return *prefix;
}

// An optional IP field of the given family, returned canonical ("" if absent).
std::string opt_ip(const Json& obj, const char* key, const std::string& path, int family) {
  const std::string text = opt_string(obj, key, path);
  if (text.empty()) return {};
  const std::string p = sub(path, key);
  auto ip = util::parse_ip(text);
  if (!ip) fail(p, quote(text) + " is not a valid IP address");
  if (ip->family != family)
    fail(p, quote(text) + " is IPv" + std::to_string(ip->family) + " but the entry is IPv" + std::to_string(family));
  return ip->str();
}

// ---- decoding ---------------------------------------------------------------------------------

Route decode_route(const Json& j, const std::string& path) {
  expect(j, j.is_object(), path, "an object");
  Route r;
  const util::IpPrefix dst = req_cidr(j, "dst", path);
  r.dst = dst.str();
  r.gw = opt_ip(j, "gw", path, dst.address.family);
  r.mtu = opt_nonzero_int(j, "mtu", path, INT_MAX);
  r.advmss = opt_nonzero_int(j, "advmss", path, INT_MAX);
  r.priority = opt_nonzero_int(j, "priority", path, INT_MAX);
  r.table = opt_int(j, "table", path, 0, INT_MAX);
  r.scope = opt_int(j, "scope", path, 0, 255);
  return r;
}

void decode_routes(const Json* arr, const std::string& path, std::vector<Route>& out) {
  if (!arr) return;
  for (std::size_t i = 0; i < arr->size(); ++i) out.push_back(decode_route((*arr)[i], at(path, i)));
}

Dns decode_dns(const Json& result) {
  Dns dns;
  const Json* j = opt_object(result, "dns", "");
  if (!j) return dns;
  dns.nameservers = opt_string_list(*j, "nameservers", "dns");
  dns.domain = opt_string(*j, "domain", "dns");
  dns.search = opt_string_list(*j, "search", "dns");
  dns.options = opt_string_list(*j, "options", "dns");
  return dns;
}

// 0.1.0/0.2.0: "ip4"/"ip6" objects of {ip, gateway, routes}.
void decode_v02_ip(const Json& result, const char* key, int family, Result& out) {
  const Json* j = opt_object(result, key, "");
  if (!j) return;
  const util::IpPrefix ip = req_cidr(*j, "ip", key);
  if (ip.address.family != family)
    fail(std::string(key) + ".ip", quote(ip.str()) + " is not an IPv" + std::to_string(family) + " address");
  out.ips.push_back(IpConfig{std::nullopt, ip.str(), opt_ip(*j, "gateway", key, family)});
  decode_routes(opt_array(*j, "routes", key), std::string(key) + ".routes", out.routes);
}

Interface decode_interface(const Json& j, const std::string& path) {
  expect(j, j.is_object(), path, "an object");
  Interface i;
  i.name = opt_string(j, "name", path);
  i.mac = opt_string(j, "mac", path);
  i.mtu = opt_nonzero_int(j, "mtu", path, INT_MAX);
  i.sandbox = opt_string(j, "sandbox", path);
  i.socket_path = opt_string(j, "socketPath", path);
  i.pci_id = opt_string(j, "pciID", path);
  return i;
}

IpConfig decode_ip(const Json& j, const std::string& path, bool has_version_field, std::size_t interface_count) {
  expect(j, j.is_object(), path, "an object");
  IpConfig ip;
  const util::IpPrefix address = req_cidr(j, "address", path);
  ip.address = address.str();
  if (has_version_field) {
    const std::string version = opt_string(j, "version", path);
    const std::string family = std::to_string(address.address.family);
    if (!version.empty() && version != family)
      fail(sub(path, "version"), quote(version) + " does not match address " + ip.address);
  }
  ip.gateway = opt_ip(j, "gateway", path, address.address.family);
  ip.interface = opt_int(j, "interface", path, 0, INT_MAX);
  if (ip.interface && static_cast<std::size_t>(*ip.interface) >= interface_count)
    fail(sub(path, "interface"), "index " + std::to_string(*ip.interface) + " is out of range (" +
                                     std::to_string(interface_count) + " interfaces)");
  return ip;
}

// 0.3.x/0.4.0 and 1.x: interfaces, ips, routes.
void decode_rich(const Json& j, bool has_version_field, Result& out) {
  if (const Json* arr = opt_array(j, "interfaces", ""))
    for (std::size_t i = 0; i < arr->size(); ++i)
      out.interfaces.push_back(decode_interface((*arr)[i], at("interfaces", i)));
  if (const Json* arr = opt_array(j, "ips", ""))
    for (std::size_t i = 0; i < arr->size(); ++i)
      out.ips.push_back(decode_ip((*arr)[i], at("ips", i), has_version_field, out.interfaces.size()));
  decode_routes(opt_array(j, "routes", ""), "routes", out.routes);
}

[[noreturn]] void unsupported(std::string_view version, const std::string& what) {
  throw CniError(ErrorCode::IncompatibleVersion, what + " CNI version " + quote(version) + " is not supported",
                 "supported versions: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0");
}

// ---- encoding ---------------------------------------------------------------------------------

util::IpPrefix must_cidr(const std::string& text, const std::string& path) {
  auto p = util::parse_cidr(text);
  if (!p) fail_encode(path, quote(text) + " is not a valid CIDR");
  return *p;
}

std::string must_ip(const std::string& text, const std::string& path) {
  auto ip = util::parse_ip(text);
  if (!ip) fail_encode(path, quote(text) + " is not a valid IP address");
  return ip->str();
}

Json encode_dns(const Dns& dns) {
  Json j = Json::object();
  if (!dns.nameservers.empty()) j["nameservers"] = dns.nameservers;
  if (!dns.domain.empty()) j["domain"] = dns.domain;
  if (!dns.search.empty()) j["search"] = dns.search;
  if (!dns.options.empty()) j["options"] = dns.options;
  return j;
}

Json encode_route(const Route& r, const std::string& path, bool v11) {
  Json j = Json::object();
  j["dst"] = must_cidr(r.dst, sub(path, "dst")).str();
  if (!r.gw.empty()) j["gw"] = must_ip(r.gw, sub(path, "gw"));
  if (!v11) return j;
  if (r.mtu && *r.mtu != 0) j["mtu"] = *r.mtu;
  if (r.advmss && *r.advmss != 0) j["advmss"] = *r.advmss;
  if (r.priority && *r.priority != 0) j["priority"] = *r.priority;
  if (r.table) j["table"] = *r.table;
  if (r.scope) j["scope"] = *r.scope;
  return j;
}

Json encode_v02(const Result& r, const std::string& version) {
  // Only the first address of each family survives, as in libcni's convertTo02x.
  Json ip4, ip6;
  for (std::size_t i = 0; i < r.ips.size(); ++i) {
    const std::string path = at("ips", i);
    const util::IpPrefix addr = must_cidr(r.ips[i].address, sub(path, "address"));
    Json& slot = addr.address.family == 4 ? ip4 : ip6;
    if (!slot.is_null()) continue;
    slot = Json::object();
    slot["ip"] = addr.str();
    if (!r.ips[i].gateway.empty()) slot["gateway"] = must_ip(r.ips[i].gateway, sub(path, "gateway"));
  }
  if (ip4.is_null() && ip6.is_null())
    throw CniError(ErrorCode::IncompatibleVersion,
                   "cannot convert CNI result to version " + version + ": it has no IP address",
                   "0.1.0 and 0.2.0 results need at least one IP address");
  for (std::size_t i = 0; i < r.routes.size(); ++i) {
    const std::string path = at("routes", i);
    Json& slot = must_cidr(r.routes[i].dst, sub(path, "dst")).address.family == 4 ? ip4 : ip6;
    if (!slot.is_null()) slot["routes"].push_back(encode_route(r.routes[i], path, false));
  }
  Json out = Json::object();
  out["cniVersion"] = version;
  if (!ip4.is_null()) out["ip4"] = std::move(ip4);
  if (!ip6.is_null()) out["ip6"] = std::move(ip6);
  out["dns"] = encode_dns(r.dns);
  return out;
}

Json encode_rich(const Result& r, const std::string& version, ResultFamily family, bool v11) {
  Json out = Json::object();
  out["cniVersion"] = version;
  if (!r.interfaces.empty()) {
    Json& list = out["interfaces"] = Json::array();
    for (const Interface& i : r.interfaces) {
      Json j = Json::object();
      j["name"] = i.name;
      if (!i.mac.empty()) j["mac"] = i.mac;
      if (v11 && i.mtu && *i.mtu != 0) j["mtu"] = *i.mtu;
      if (!i.sandbox.empty()) j["sandbox"] = i.sandbox;
      if (v11 && !i.socket_path.empty()) j["socketPath"] = i.socket_path;
      if (v11 && !i.pci_id.empty()) j["pciID"] = i.pci_id;
      list.push_back(std::move(j));
    }
  }
  if (!r.ips.empty()) {
    Json& list = out["ips"] = Json::array();
    for (std::size_t n = 0; n < r.ips.size(); ++n) {
      const IpConfig& ip = r.ips[n];
      const std::string path = at("ips", n);
      const util::IpPrefix addr = must_cidr(ip.address, sub(path, "address"));
      Json j = Json::object();
      if (family == ResultFamily::V04) j["version"] = addr.address.family == 4 ? "4" : "6";
      if (ip.interface) {
        if (*ip.interface < 0 || static_cast<std::size_t>(*ip.interface) >= r.interfaces.size())
          fail_encode(sub(path, "interface"), "index " + std::to_string(*ip.interface) + " is out of range");
        j["interface"] = *ip.interface;
      }
      j["address"] = addr.str();
      if (!ip.gateway.empty()) j["gateway"] = must_ip(ip.gateway, sub(path, "gateway"));
      list.push_back(std::move(j));
    }
  }
  if (!r.routes.empty()) {
    Json& list = out["routes"] = Json::array();
    for (std::size_t n = 0; n < r.routes.size(); ++n) list.push_back(encode_route(r.routes[n], at("routes", n), v11));
  }
  out["dns"] = encode_dns(r.dns);
  return out;
}

}  // namespace

Result decode_result(const Json& j, std::string_view fallback_version) {
  if (!j.is_object()) fail("result", std::string("expected an object, got ") + j.type_name());
  std::string version = opt_string(j, "cniVersion", "");
  if (version.empty()) version = std::string(fallback_version);
  if (version.empty()) version = "0.1.0";
  if (!is_supported_version(version)) unsupported(version, "result");
  const SpecVersion v = *SpecVersion::parse(version);

  Result out;
  out.cni_version = version;
  switch (result_family(v)) {
    case ResultFamily::V02:
      decode_v02_ip(j, "ip4", 4, out);
      decode_v02_ip(j, "ip6", 6, out);
      break;
    case ResultFamily::V04:
      decode_rich(j, true, out);
      break;
    case ResultFamily::V1:
      decode_rich(j, false, out);
      break;
  }
  out.dns = decode_dns(j);
  return out;
}

Result decode_result_text(std::string_view text, std::string_view fallback_version) {
  if (text.size() > kMaxResultBytes)
    throw CniError(ErrorCode::Decoding, "invalid CNI result: " + std::to_string(text.size()) +
                                            " bytes is larger than the " + std::to_string(kMaxResultBytes) +
                                            "-byte limit");
  Json j;
  try {
    j = Json::parse(text.begin(), text.end(), [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxJsonDepth)
        throw CniError(ErrorCode::Decoding,
                       "invalid CNI result: JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      return true;
    });
  } catch (const Json::exception& e) {
    throw CniError(ErrorCode::Decoding, "invalid CNI result: " + util::describe_json_error(e));
  }
  return decode_result(j, fallback_version);
}

Json encode_result(const Result& r, std::string_view target_version) {
  const std::string version = target_version.empty() ? "0.1.0" : std::string(target_version);
  if (!is_supported_version(version)) unsupported(version, "target");
  const SpecVersion v = *SpecVersion::parse(version);
  const ResultFamily family = result_family(v);
  if (family == ResultFamily::V02) return encode_v02(r, version);
  return encode_rich(r, version, family, v >= SpecVersion{1, 1, 0});
}

}  // namespace manifold::cni
