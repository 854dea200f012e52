// CNI spec versions: parsing, comparison and the list of versions manifold speaks. Results and
// configs carry a "cniVersion" string; an empty one means 0.1.0, as in libcni.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace manifold::cni {

/// A parsed semantic version "major.minor.patch".
struct SpecVersion {
  int major = 0;
  int minor = 1;
  int patch = 0;

  /// Parses "X.Y.Z" (or "" as 0.1.0). Returns nullopt for anything else.
  static std::optional<SpecVersion> parse(std::string_view text);
  /// Renders "X.Y.Z".
  std::string str() const;

  auto operator<=>(const SpecVersion&) const = default;
};

/// The result shape family a version belongs to.
enum class ResultFamily { V02, V04, V1 };

/// Every version manifold supports, oldest first: 0.1.0 … 1.1.0.
const std::vector<std::string>& supported_versions();

/// True if `text` is exactly one of supported_versions().
bool is_supported_version(std::string_view text);

/// The result family of a supported version (0.1/0.2 → V02, 0.3/0.4 → V04, 1.x → V1).
ResultFamily result_family(const SpecVersion& v);

/// Parses and checks a config's cniVersion; throws CniError(IncompatibleVersion) if unsupported.
SpecVersion require_supported_version(std::string_view text);

}  // namespace manifold::cni
