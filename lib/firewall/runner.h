// The side-effect boundary of the firewall module: reading a table (`iptables-save -t nat` for the
// mesh, `-t filter` for network policy), loading a payload (`iptables-restore --noflush`) and choosing a backend, all inside one pod
// network namespace. IptablesRunner is the interface the mesh and policy lifecycles are written against;
// RealIptablesRunner runs the node's binaries: looked up only
// in /usr/sbin, /sbin, /usr/bin, never via PATH; always `--noflush`; for legacy, `-w <secs>` and
// XTABLES_LOCKFILE set to the netns path so the lock is per pod and never contends with the host's
// kube-proxy. FakeIptablesRunner (fake_runner.h) simulates the table for unit tests.
#pragma once

#include <string>
#include <vector>

#include "firewall/iptables_types.h"

namespace manifold::firewall {

/// Reads and writes the tables of one network namespace.
class IptablesRunner {
 public:
  virtual ~IptablesRunner() = default;

  /// The `iptables-save -t <table>` text of `family` with `backend`. Throws CniError(Firewall).
  virtual std::string save(Family family, Backend backend, Table table) = 0;
  /// Loads `payload` with `iptables-restore --noflush` (atomic: all or nothing). Throws
  /// CniError(Firewall) with iptables' message when the load fails.
  virtual void restore(Family family, Backend backend, const std::string& payload) = 0;
  /// The backend to use when `iptablesMode` is auto, chosen the way Istio does in the pod netns:
  /// legacy if the legacy tables already hold rules, else nft if it is usable, else legacy.
  virtual Backend detect() = 0;
  /// True when the save and restore binaries for `family`/`backend` exist.
  virtual bool available(Family family, Backend backend) = 0;
};

/// Runs the node's iptables binaries inside a network namespace.
class RealIptablesRunner final : public IptablesRunner {
 public:
  /// Where and how to run.
  struct Options {
    std::string netns_path;      ///< the pod's netns (bind mount or /proc/<pid>/ns/net); empty = ours
    int lock_wait_seconds = 30;  ///< legacy only: `-w` seconds
    std::vector<std::string> bin_dirs{"/usr/sbin", "/sbin", "/usr/bin"};  ///< searched in order
  };

  /// Uses `options` for every call.
  explicit RealIptablesRunner(Options options);

  std::string save(Family family, Backend backend, Table table) override;
  void restore(Family family, Backend backend, const std::string& payload) override;
  Backend detect() override;
  bool available(Family family, Backend backend) override;

 private:
  /// Absolute path of `name` in the first bin dir holding it; throws CniError(Firewall) if none.
  std::string find_binary(const std::string& name) const;
  /// Absolute path of `name`, or "" when no bin dir holds it.
  std::string lookup_binary(const std::string& name) const;
  /// The child environment for `backend` (LC_ALL=C; XTABLES_LOCKFILE for legacy).
  std::vector<std::string> child_env(Backend backend) const;
  /// True when the legacy tables of `family` already hold rules.
  bool legacy_has_rules(Family family);
  /// True when the nft backend reports nf_tables and a probe chain loads and unloads.
  bool nft_usable();

  Options options_;
};

}  // namespace manifold::firewall
