// Implementations of the real (getenv) and fake (map) environment sources.
#include "util/env.h"

#include <cstdlib>

namespace manifold::util {

std::optional<std::string> ProcessEnv::get(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> FakeEnv::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

bool is_env_name_pattern(const std::string& pattern) {
  std::string name = pattern;
  if (!name.empty() && name.back() == '*') name.pop_back();
  if (name.empty() || name.size() > 256 || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool env_name_matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return name == pattern;
}

}  // namespace manifold::util
