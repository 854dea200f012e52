// Implementation of per-invocation logger configuration.
#include "plugin/cni/logging.h"

#include "util/log_file.h"

namespace manifold::plugin {

void configure_logging(const cni::MetaConfig& config, const cni::Invocation& inv) {
  util::Logger& log = util::Logger::instance();
  log.set_level(config.log_level);
  auto file = config.log_file.empty()
                  ? nullptr
                  : util::open_log_file(
                        config.log_file,
                        util::rotation_from_log_options(config.log_options.max_size_mb, config.log_options.max_backups,
                                                        config.log_options.max_age_days, config.log_options.compress));
  bool have_file = file != nullptr;
  log.set_file_sink(std::move(file));
  log.set_to_stderr(config.log_to_stderr || (!config.log_file.empty() && !have_file));
  auto pod = cni::pod_ref_from(inv.args);
  log.set_context(inv.container_id, pod.known() ? pod.namespace_ + "/" + pod.name : std::string());
  if (!config.log_level_valid) util::log_error("unknown logLevel in config; keeping ", "the default level");
}

}  // namespace manifold::plugin
