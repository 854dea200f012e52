// What every use of the engine sets up first, for one sandbox and one manifold network: the parsed
// meta config, the cache of its cniDir, the delegate runner searching binDir then CNI_PATH, and the
// cache key of the call (container, network name, CNI_IFNAME). Also the readiness wait every verb
// starts with, the plugin preflight that makes a bad `type` fail before anything runs, and where a
// delegate call of a cached attachment applies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cni/netconf.h"
#include "cni/skel.h"
#include "engine/attachment.h"
#include "engine/services.h"
#include "exec/delegate_runner.h"
#include "exec/plugin_invoker.h"
#include "store/cache.h"

namespace manifold::engine {

/// The per-call state every engine operation works with.
struct Session {
  cni::MetaConfig config;                         ///< the meta config
  std::unique_ptr<store::Cache> cache;            ///< the cache of config.cni_dir
  std::unique_ptr<exec::PluginInvoker> invoker;   ///< runs delegate binaries
  std::unique_ptr<exec::DelegateRunner> runner;   ///< runs confs and conflists through `invoker`
  std::shared_ptr<util::FileWriter> file_writer;  ///< the services' device-info writer (may be null)
  std::vector<std::string> search_dirs;           ///< binDir, then CNI_PATH
  store::EntryKey key;                            ///< the call's cache entry
};

/// Opens the session of the call `inv` with its parsed `config`.
Session open_session(const Services& services, cni::MetaConfig config, const cni::Invocation& inv);

/// How a verb treats a readiness indicator file that is not there yet.
enum class Readiness {
  Wait,      ///< ADD, GC, STATUS: poll for it, bounded by readinessTimeout
  LookOnce,  ///< DEL: look once, warn and go on (a DEL must release what it can)
};

/// Waits for the readiness indicator file as `mode` says. Throws CniError(TryAgainLater) when a
/// Wait runs out.
void wait_for_readiness(const Services& services, const cni::MetaConfig& config, Readiness mode);

/// Finds every plugin binary of every attachment before anything runs, so a bad `type` or a missing
/// binary fails the ADD with nothing created.
void preflight_plugins(const Session& session, const std::vector<Attachment>& attachments);

/// Where a delegate call of the cached attachment `a` applies: the sandbox of `inv` with CNI_NETNS
/// `netns`, the attachment's ifname and cached CNI_ARGS. Throws CniError(Decoding) when the cached
/// CNI_ARGS are not a string (a corrupt cache entry).
exec::DelegateTarget target_for(const cni::Invocation& inv, const std::string& netns, const store::AttachmentRecord& a);

}  // namespace manifold::engine
