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

}  // namespace manifold::util
