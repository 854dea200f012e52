// Environment access behind an interface. Code that depends on environment variables (the in-cluster
// Kubernetes service address, CNI_* variables) reads them through an EnvSource, so unit tests can
// supply a map instead of mutating the process environment.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace manifold::util {

/// Whether `pattern` names environment variables: a name of letters, digits and underscores not
/// starting with a digit, optionally ending in `*` to stand for every name with that prefix.
bool is_env_name_pattern(const std::string& pattern);

/// Whether variable `name` matches `pattern` (an exact name, or a prefix followed by `*`).
bool env_name_matches(const std::string& pattern, const std::string& name);

/// Read-only access to environment variables.
class EnvSource {
 public:
  virtual ~EnvSource() = default;
  /// The value of `name`, or nullopt when it is not set (a set-but-empty variable yields "").
  virtual std::optional<std::string> get(const std::string& name) const = 0;
};

/// The real process environment (getenv).
class ProcessEnv final : public EnvSource {
 public:
  /// getenv(name).
  std::optional<std::string> get(const std::string& name) const override;
};

/// A map-backed environment for tests.
class FakeEnv final : public EnvSource {
 public:
  FakeEnv() = default;
  /// Creates an environment holding exactly `vars`.
  explicit FakeEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  /// Sets (or replaces) one variable.
  void set(const std::string& name, std::string value) { vars_[name] = std::move(value); }
  /// Removes one variable.
  void unset(const std::string& name) { vars_.erase(name); }
  /// The variable from the map.
  std::optional<std::string> get(const std::string& name) const override;

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace manifold::util
