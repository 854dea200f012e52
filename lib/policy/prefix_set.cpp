// Implementation of prefix subtraction: each except splits the prefixes it lies in into the
// siblings along its path, and removes the prefixes it covers.
#include "policy/prefix_set.h"

#include <algorithm>

namespace manifold::policy {

namespace {

// The prefix of length `len` that shares `p`'s first len-1 bits and differs in bit len-1.
util::IpPrefix sibling(const util::IpPrefix& p, int len) {
  util::IpPrefix out{p.address, len};
  const int bit = len - 1;
  out.address.bytes[static_cast<std::size_t>(bit / 8)] ^= static_cast<std::uint8_t>(0x80 >> (bit % 8));
  return out.masked();
}

bool before(const util::IpPrefix& a, const util::IpPrefix& b) {
  if (a.address.bytes != b.address.bytes) return a.address.bytes < b.address.bytes;
  return a.prefix_len < b.prefix_len;
}

}  // namespace

std::vector<util::IpPrefix> subtract_prefixes(const util::IpPrefix& cidr, const std::vector<util::IpPrefix>& except) {
  std::vector<util::IpPrefix> current{cidr.masked()};
  for (const util::IpPrefix& raw : except) {
    if (raw.address.family != cidr.address.family) continue;
    const util::IpPrefix cut = raw.masked();
    std::vector<util::IpPrefix> next;
    for (const util::IpPrefix& p : current) {
      if (cut.prefix_len <= p.prefix_len && cut.contains(p)) continue;  // wholly excepted
      if (p.prefix_len < cut.prefix_len && p.contains(cut)) {
        for (int len = p.prefix_len + 1; len <= cut.prefix_len; ++len) next.push_back(sibling({cut.address, len}, len));
        continue;
      }
      next.push_back(p);
    }
    current = std::move(next);
  }
  std::sort(current.begin(), current.end(), before);
  return current;
}

}  // namespace manifold::policy
