// Invoking a delegate CNI plugin: find the binary, build its environment (the CNI_* variables of
// the call plus an allow-list of the runtime's variables, so that credentials and injection hooks
// in the runtime's environment never reach a delegate), run it with the config on stdin under a
// timeout, and turn every failure into a CniError the runtime can act on.
// A delegate's own CNI error JSON is passed through unchanged (its code tells the runtime whether
// to retry); anything else it does wrong (garbage, crash, hang, missing binary) becomes
// DelegateFailed naming the plugin. The delegate's stderr always goes to our log.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "exec/process.h"

namespace manifold::exec {

/// One CNI call to a delegate plugin.
struct PluginCall {
  /// CNI_COMMAND: ADD, DEL, CHECK, GC, STATUS or VERSION.
  std::string command;
  /// CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS and CNI_PATH for the delegate.
  std::string container_id, netns, ifname, cni_args, cni_path;
  /// The delegate's network configuration (conf JSON), written to its stdin.
  std::string config;
};

/// Most bytes of a failed delegate's stderr (or stdout) quoted in the error message.
inline constexpr size_t kFailureTailBytes = 1024;
/// Most bytes of a delegate's stderr copied to our log per call.
inline constexpr size_t kLoggedStderrBytes = 64 * 1024;

/// Finds and runs delegate plugins.
class PluginInvoker {
 public:
  /// `runner` must outlive the invoker; `search_dirs` are searched in order (binDir, then
  /// CNI_PATH); `timeout` bounds every call; `base_env` is the environment the delegate inherits
  /// (CNI_* entries in it are replaced by the call's).
  /// `extra_env` names further variables (or prefixes ending in `*`) of base_env that delegates
  /// may see besides the built-in allow-list (the config's delegateEnv).
  PluginInvoker(ProcessRunner& runner, std::vector<std::string> search_dirs, std::chrono::milliseconds timeout,
                std::vector<std::string> base_env, std::vector<std::string> extra_env = {});

  /// Finds and runs `type`. Returns stdout on exit 0 (possibly empty, which is fine for DEL, CHECK,
  /// GC and STATUS; validating an ADD result is the caller's job). On a non-zero exit: when stdout
  /// is CNI error JSON ({code,msg[,details]}) throws CniError with the delegate's code, msg and
  /// details unchanged; otherwise throws CniError(DelegateFailed) naming the plugin, the exit
  /// status or signal and a bounded tail of stderr. Timeout: CniError(DelegateFailed, "plugin X
  /// timed out after N ms (killed)"). Also throws InvalidConfig for an invalid type or a NUL byte
  /// in the config or environment, and DelegateFailed when the plugin is missing or cannot be run.
  std::string invoke(const std::string& type, const PluginCall& call);

 private:
  ProcessRunner& runner_;
  std::vector<std::string> search_dirs_;
  std::chrono::milliseconds timeout_;
  std::vector<std::string> base_env_;
  std::vector<std::string> extra_env_;
};

/// Whether a variable of the runtime's environment is passed on to delegates: only what a plugin
/// needs to be loaded and to run its tools (PATH, LD_LIBRARY_PATH, TMPDIR, XTABLES_LOCKFILE) and to
/// format text (TZ, LANG, LANGUAGE, LC_*). Everything else the runtime has (credentials such as
/// KUBECONFIG or tokens, proxy URLs, LD_PRELOAD, sanitizer options, ...) is withheld; CNI_*
/// variables are always set per call. `extra` adds names or prefixes ending in `*` (delegateEnv).
bool passes_to_delegate(std::string_view name, const std::vector<std::string>& extra = {});

/// Builds the child environment: the entries of base_env whose name passes_to_delegate (with
/// `extra`), then
/// CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH set from the call
/// (CNI_COMMAND and CNI_PATH always, the others only when non-empty). Entries without '=' or with
/// an empty name are dropped; a duplicated name keeps its first position and its last value.
std::vector<std::string> plugin_environment(const std::vector<std::string>& base_env, const PluginCall& call,
                                            const std::vector<std::string>& extra = {});

}  // namespace manifold::exec
