// Implementation of spec version parsing and the supported-version table.
#include "cni/version.h"

#include <charconv>

#include "cni/error.h"

namespace manifold::cni {

namespace {

bool parse_component(std::string_view s, int& out) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<SpecVersion> SpecVersion::parse(std::string_view text) {
  if (text.empty()) return SpecVersion{0, 1, 0};
  SpecVersion v;
  auto dot1 = text.find('.');
  if (dot1 == std::string_view::npos) return std::nullopt;
  auto dot2 = text.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos) return std::nullopt;
  if (!parse_component(text.substr(0, dot1), v.major) ||
      !parse_component(text.substr(dot1 + 1, dot2 - dot1 - 1), v.minor) ||
      !parse_component(text.substr(dot2 + 1), v.patch))
    return std::nullopt;
  return v;
}

std::string SpecVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> versions = {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  return versions;
}

bool is_supported_version(std::string_view text) {
  for (const auto& v : supported_versions())
    if (v == text) return true;
  return false;
}

ResultFamily result_family(const SpecVersion& v) {
  if (v.major >= 1) return ResultFamily::V1;
  if (v.minor >= 3) return ResultFamily::V04;
  return ResultFamily::V02;
}

SpecVersion require_supported_version(std::string_view text) {
  std::string_view effective = text.empty() ? std::string_view("0.1.0") : text;
  if (!is_supported_version(effective))
    throw CniError(ErrorCode::IncompatibleVersion,
                   "incompatible CNI versions: cniVersion \"" + std::string(text) + "\" is not supported",
                   "supported versions: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0");
  return *SpecVersion::parse(effective);
}

}  // namespace manifold::cni
