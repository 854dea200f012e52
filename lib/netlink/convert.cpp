// Implementation of the util::IpPrefix <-> nl_addr conversions and the strict JSON field readers.
#include "netlink/convert.h"

#include <sys/socket.h>

#include <cstring>

#include "cni/error.h"
#include "netlink/family.h"

namespace manifold::netlink::detail {

using cni::CniError;
using cni::ErrorCode;

NlAddrHandle to_nl_addr(const util::IpPrefix& prefix) {
  const util::IpAddress& ip = prefix.address;
  NlAddrHandle addr(nl_addr_build(family_of(ip), ip.bytes.data(), ip.size()));
  if (!addr) throw CniError(ErrorCode::Internal, "netlink: out of memory building an address");
  nl_addr_set_prefixlen(addr.get(), prefix.prefix_len);
  return addr;
}

NlAddrHandle to_nl_addr(const util::IpAddress& ip) { return to_nl_addr(util::IpPrefix::host(ip)); }

NlAddrHandle default_nl_addr(int family) {
  NlAddrHandle addr(nl_addr_build(family, nullptr, 0));
  if (!addr) throw CniError(ErrorCode::Internal, "netlink: out of memory building an address");
  nl_addr_set_prefixlen(addr.get(), 0);
  return addr;
}

std::optional<util::IpPrefix> prefix_from_bytes(int family, const void* data, std::size_t size, int length) {
  if (!is_ip_family(family)) return std::nullopt;
  util::IpPrefix out;
  out.address.family = family == AF_INET ? 4 : 6;
  if (length < 0 || length > out.address.bits()) return std::nullopt;
  // A zero-length address is how libnl represents "default" (no RTA_DST attribute).
  if (size != 0 && size != out.address.size()) return std::nullopt;
  if (size != 0 && data == nullptr) return std::nullopt;
  if (size != 0) std::memcpy(out.address.bytes.data(), data, size);
  out.prefix_len = length;
  return out;
}

std::optional<util::IpPrefix> from_nl_addr(nl_addr* addr) {
  if (addr == nullptr) return std::nullopt;
  return prefix_from_bytes(nl_addr_get_family(addr), nl_addr_get_binary_addr(addr), nl_addr_get_len(addr),
                           static_cast<int>(nl_addr_get_prefixlen(addr)));
}

int family_to_json(int family) { return family == AF_INET6 ? 6 : 4; }

int json_int(const Json& json, std::string_view what, const char* key, long long lo, long long hi,
             std::optional<int> fallback) {
  const auto it = json.find(key);
  if (it == json.end()) {
    if (fallback) return *fallback;
    throw CniError(ErrorCode::Decoding, std::string(what) + ": missing \"" + key + "\"");
  }
  if (!it->is_number_integer()) {
    throw CniError(ErrorCode::Decoding, std::string(what) + ": \"" + key + "\" must be an integer");
  }
  const long long value = it->get<long long>();
  if (value < lo || value > hi) {
    throw CniError(ErrorCode::Decoding,
                   std::string(what) + ": \"" + key + "\" out of range (" + std::to_string(value) + ")");
  }
  return static_cast<int>(value);
}

std::string json_string(const Json& json, std::string_view what, const char* key, std::size_t max_size) {
  const auto it = json.find(key);
  if (it == json.end()) return {};
  if (!it->is_string()) {
    throw CniError(ErrorCode::Decoding, std::string(what) + ": \"" + key + "\" must be a string");
  }
  const std::string& value = it->get_ref<const std::string&>();
  if (value.size() > max_size) {
    throw CniError(ErrorCode::Decoding, std::string(what) + ": \"" + key + "\" is too long");
  }
  return value;
}

std::optional<util::IpPrefix> json_prefix(const Json& json, std::string_view what, const char* key) {
  const std::string text = json_string(json, what, key, 64);
  if (text.empty()) return std::nullopt;
  std::optional<util::IpPrefix> prefix = util::parse_ip_or_cidr(text);
  if (!prefix) {
    throw CniError(ErrorCode::Decoding, std::string(what) + ": \"" + key + "\" is not a CIDR");
  }
  return prefix;
}

std::optional<util::IpAddress> json_address(const Json& json, std::string_view what, const char* key) {
  const std::string text = json_string(json, what, key, 64);
  if (text.empty()) return std::nullopt;
  std::optional<util::IpAddress> ip = util::parse_ip(text);
  if (!ip) {
    throw CniError(ErrorCode::Decoding, std::string(what) + ": \"" + key + "\" is not an IP address");
  }
  return ip;
}

int json_family(const Json& json, std::string_view what) {
  const int family = json_int(json, what, "family", 4, 6, std::nullopt);
  if (family == 4) return AF_INET;
  if (family == 6) return AF_INET6;
  throw CniError(ErrorCode::Decoding, std::string(what) + ": \"family\" must be 4 or 6");
}

}  // namespace manifold::netlink::detail
