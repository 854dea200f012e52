// Fixtures for the firewall integration tests: a throwaway network namespace per test
// (`ip netns add mffw-<pid>-<n>`, deleted by the destructor even when an assertion fails), commands
// run inside it with `ip netns exec` independently of the code under test, and a runner decorator
// that counts the iptables executions the lifecycle makes.
#pragma once

#include <string>

#include "firewall/iptables_types.h"
#include "firewall/runner.h"
#include "root_skip.h"

namespace manifold::firewall::itest {

/// The outcome of a shell command.
struct CommandResult {
  int rc = -1;      ///< exit status (-1 when it could not run)
  std::string out;  ///< stdout and stderr, merged
};

/// A fresh network namespace, removed on destruction.
class TestNetns {
 public:
  /// Creates `mffw-<pid>-<n>`; check ready() before use.
  TestNetns();
  ~TestNetns();
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  /// True when the namespace exists (we are root and `ip netns add` worked).
  bool ready() const { return ready_; }
  /// Why it is not ready.
  const std::string& why() const { return why_; }
  /// The namespace name.
  const std::string& name() const { return name_; }
  /// The bind-mounted namespace file, /var/run/netns/<name>.
  std::string path() const { return "/var/run/netns/" + name_; }

  /// Runs a shell command inside the namespace.
  CommandResult run(const std::string& command) const;
  /// True when `family`/`backend` binaries exist and `-save -t nat` works in the namespace.
  bool usable(Family family, Backend backend) const;
  /// `<ip|ip6>tables-<backend>-save -t nat` in the namespace, without the `#` comment lines.
  std::string nat_rules(Family family, Backend backend) const;
  /// Loads a payload with `<ip|ip6>tables-<backend>-restore --noflush`; returns its exit status.
  CommandResult load(Family family, Backend backend, const std::string& payload) const;
  /// A RealIptablesRunner for this namespace.
  RealIptablesRunner runner(int lock_wait_seconds = 30) const;

 private:
  std::string name_;
  bool ready_ = false;
  std::string why_;
};

/// Passes every call through to another runner and counts them.
class CountingRunner final : public IptablesRunner {
 public:
  /// Wraps `inner`.
  explicit CountingRunner(IptablesRunner& inner) : inner_(inner) {}
  std::string save(Family family, Backend backend, Table table) override;
  void restore(Family family, Backend backend, const std::string& payload) override;
  Backend detect() override { return inner_.detect(); }
  bool available(Family family, Backend backend) override { return inner_.available(family, backend); }

  int saves = 0;     ///< save() calls so far
  int restores = 0;  ///< restore() calls so far

 private:
  IptablesRunner& inner_;
};

}  // namespace manifold::firewall::itest

/// Skips the current test (root_skip.h: fails it under CI=true) unless `ns` is ready and
/// `family`/`backend` usable in it.
#define FW_SKIP_UNLESS_USABLE(ns, family, backend)                                            \
  do {                                                                                        \
    if (!(ns).ready()) ITEST_SKIP((ns).why());                                                \
    if (!(ns).usable((family), (backend)))                                                    \
      ITEST_SKIP(::manifold::firewall::save_binary_name((family), (backend)) << " unusable"); \
  } while (false)
