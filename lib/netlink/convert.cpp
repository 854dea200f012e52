// Implementation of the IpPrefix <-> nl_addr conversions and the strict JSON field readers.
#include "netlink/convert.h"

#include <sys/socket.h>

#include "cni/error.h"

namespace manifold::netlink::detail {

using cni::CniError;
using cni::ErrorCode;

NlAddrHandle to_nl_addr(const IpPrefix& prefix) {
  NlAddrHandle addr(nl_addr_build(prefix.family, prefix.bytes.data(), prefix.address_size()));
  if (!addr) throw CniError(ErrorCode::Internal, "netlink: out of memory building an address");
  nl_addr_set_prefixlen(addr.get(), prefix.length);
  return addr;
}

NlAddrHandle default_nl_addr(int family) {
  NlAddrHandle addr(nl_addr_build(family, nullptr, 0));
  if (!addr) throw CniError(ErrorCode::Internal, "netlink: out of memory building an address");
  nl_addr_set_prefixlen(addr.get(), 0);
  return addr;
}

std::optional<IpPrefix> from_nl_addr(nl_addr* addr) {
  if (addr == nullptr) return std::nullopt;
  return prefix_from_bytes(nl_addr_get_family(addr), nl_addr_get_binary_addr(addr),
                           nl_addr_get_len(addr), static_cast<int>(nl_addr_get_prefixlen(addr)));
}

std::string prefix_text(const std::optional<IpPrefix>& prefix) {
  return prefix ? prefix->to_string() : std::string();
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
    throw CniError(ErrorCode::Decoding, std::string(what) + ": \"" + key + "\" out of range (" +
                                            std::to_string(value) + ")");
  }
  return static_cast<int>(value);
}

std::string json_string(const Json& json, std::string_view what, const char* key,
                        std::size_t max_size) {
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

int json_family(const Json& json, std::string_view what) {
  const int family = json_int(json, what, "family", 4, 6, std::nullopt);
  if (family == 4) return AF_INET;
  if (family == 6) return AF_INET6;
  throw CniError(ErrorCode::Decoding, std::string(what) + ": \"family\" must be 4 or 6");
}

}  // namespace manifold::netlink::detail
