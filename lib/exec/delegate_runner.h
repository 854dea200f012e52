// Running one delegate — a single plugin conf or a conflist chain — for each CNI verb, the way
// libcni runs a network: ADD threads prevResult through the chain's plugins in order; DEL runs them
// in reverse with the cached result as prevResult (0.4.0+); CHECK runs them in order with the cached
// result; GC and STATUS go to plugins that speak 1.1.0. The input is always the cached, prepared
// delegate config text, so DEL and CHECK replay exactly what ADD used.
#pragma once

#include <string>

#include "exec/plugin_invoker.h"
#include "util/json.h"

namespace manifold::exec {

/// Where a delegate call applies.
struct DelegateTarget {
  std::string container_id;  ///< CNI_CONTAINERID
  std::string netns;         ///< CNI_NETNS
  std::string ifname;        ///< CNI_IFNAME for this attachment
  std::string cni_args;      ///< CNI_ARGS for this attachment
  std::string cni_path;      ///< CNI_PATH passed on to the delegate
};

/// Runs delegates through a PluginInvoker.
class DelegateRunner {
 public:
  /// Uses `invoker` for every plugin execution.
  explicit DelegateRunner(PluginInvoker& invoker) : invoker_(invoker) {}

  /// ADD: returns the result text of the last plugin (the delegate's result).
  std::string add(const std::string& config_text, const DelegateTarget& target);
  /// DEL: every plugin is attempted, in reverse; the first error is rethrown after all ran.
  void del(const std::string& config_text, const std::string& cached_result, const DelegateTarget& target);
  /// CHECK: each plugin in order with the cached result as prevResult. Delegates below 0.4.0
  /// cannot be checked and are skipped (returns false); returns true when CHECK ran.
  bool check(const std::string& config_text, const std::string& cached_result, const DelegateTarget& target);
  /// STATUS: each plugin of a 1.1.0+ delegate; returns false when the delegate is older (skipped).
  bool status(const std::string& config_text, const std::string& cni_path);
  /// GC: each plugin of a 1.1.0+ delegate with `valid_attachments` injected as
  /// "cni.dev/valid-attachments"; returns false when the delegate is older (skipped).
  bool gc(const std::string& config_text, const Json& valid_attachments, const std::string& cni_path);

 private:
  PluginInvoker& invoker_;
};

}  // namespace manifold::exec
