// Implementation of the per-call session, the readiness wait, the preflight and delegate targets.
#include "engine/session.h"

#include "cni/error.h"
#include "engine/cached.h"
#include "exec/plugin_finder.h"
#include "util/log.h"

namespace manifold::engine {

Session open_session(const Services& services, cni::MetaConfig config, const cni::Invocation& inv) {
  Session session;
  session.config = std::move(config);
  session.key = {inv.container_id, session.config.name, inv.ifname};
  if (!session.config.bin_dir.empty()) session.search_dirs.push_back(session.config.bin_dir);
  for (auto& d : exec::split_cni_path(inv.path)) session.search_dirs.push_back(std::move(d));
  session.cache = services.open_cache(session.config.cni_dir);
  session.invoker = std::make_unique<exec::PluginInvoker>(*services.runner, session.search_dirs,
                                                          std::chrono::seconds(session.config.delegate_timeout_s),
                                                          services.environment, session.config.delegate_env);
  session.runner = std::make_unique<exec::DelegateRunner>(*session.invoker);
  session.file_writer = services.file_writer;
  return session;
}

void wait_for_readiness(const Services& services, const cni::MetaConfig& config, Readiness mode) {
  const std::string& file = config.readiness_indicator_file;
  if (file.empty() || services.file_exists(file)) return;
  if (mode == Readiness::LookOnce) {
    util::log_warning("readiness indicator file ", file, " does not exist; continuing DEL");
    return;
  }
  for (int waited = 0; waited < config.readiness_timeout_s; ++waited) {
    services.sleeper->sleep_for(std::chrono::seconds(1));
    if (services.file_exists(file)) return;
  }
  throw cni::CniError(cni::ErrorCode::TryAgainLater,
                      "have you checked that your default network is ready? still waiting for "
                      "readinessindicatorfile @ " +
                          file + " after " + std::to_string(config.readiness_timeout_s) + "s");
}

void preflight_plugins(const Session& session, const std::vector<Attachment>& attachments) {
  for (const auto& a : attachments) {
    if (cni::is_conflist(a.delegate)) {
      for (const auto& p : a.delegate["plugins"])
        (void)exec::find_plugin_or_builtin(p["type"].get<std::string>(), session.search_dirs);
    } else {
      (void)exec::find_plugin_or_builtin(a.delegate["type"].get<std::string>(), session.search_dirs);
    }
  }
}

exec::DelegateTarget target_for(const cni::Invocation& inv, const std::string& netns,
                                const store::AttachmentRecord& a) {
  exec::DelegateTarget t;
  t.container_id = inv.container_id;
  t.netns = netns;
  t.ifname = a.ifname;
  t.cni_args = cached_cni_args(a, inv.args_text);
  t.cni_path = inv.path;
  return t;
}

}  // namespace manifold::engine
