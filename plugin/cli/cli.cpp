// The human command line (when CNI_COMMAND is not set), parsed with CLI11: `version`, `validate`,
// `inspect`, `install`, `agent` and `gc`. Subcommands stay thin: flags are turned into an options struct and
// handed to the subcommand's run_* function. Usage errors exit with 2, `--help` with 0.
#include "plugin/cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cni/version.h"
#include "http/beast_transport.h"
#include "plugin/cli/agent.h"
#include "plugin/cli/gc.h"
#include "plugin/cli/inspect.h"
#include "plugin/cli/install.h"
#include "plugin/cli/validate.h"

namespace manifold::plugin {

namespace {

int print_version() {
  std::cout << "manifold " << MANIFOLD_VERSION << "\n"
            << "commit: " << MANIFOLD_GIT_COMMIT << "\n"
            << "build: " << MANIFOLD_BUILD_FLAGS << "\n"
            << "TLS: " << http::tls_library_version() << " (" << MANIFOLD_TLS_LIBRARY_BUILD << ")\n"
            << "CNI versions:";
  for (const auto& v : cni::supported_versions()) std::cout << ' ' << v;
  std::cout << "\n";
  return 0;
}

// The flags of `install`; `agent` takes those of its installer thread, which always watches.
void add_install_flags(CLI::App& cmd, InstallOptions& o, bool agent = false) {
  cmd.add_option("--bin-source", o.bin_source, "binary to install (default: this executable)");
  cmd.add_option("--bin-dir", o.bin_dir, "CNI plugin directory")->capture_default_str();
  cmd.add_option("--binary-name", o.binary_name, "file name of the installed binary")->capture_default_str();
  cmd.add_flag("--skip-binary", o.skip_binary, "do not copy the binary");
  cmd.add_option("--conf-dir", o.conf_dir, "CNI config directory of the runtime")->capture_default_str();
  cmd.add_option("--kubeconfig-dir", o.kubeconfig_dir,
                 "where the kubeconfig, token and CA copies are written (default: <conf-dir>/manifold.d)");
  cmd.add_option("--kubeconfig-host-dir", o.kubeconfig_host_dir,
                 "the kubeconfig dir as the node sees it, when mounted elsewhere in the installer");
  cmd.add_flag("--no-kubeconfig", o.no_kubeconfig, "standalone node: no kubeconfig, no Kubernetes access");
  cmd.add_option("--service-account-dir", o.service_account_dir, "service-account token and ca.crt")
      ->capture_default_str();
  cmd.add_flag("--reference-service-account", o.reference_service_account,
               "reference the service-account files in place instead of copying them (they must be visible "
               "to the node)");
  cmd.add_option("--api-server", o.api_server,
                 "API server URL (default: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)");
  cmd.add_option("--cni-version", o.cni_version, "cniVersion of the generated config (default: the primary's)");
  cmd.add_flag("--force-cni-version", o.force_cni_version, "use --cni-version even when the primary's differs");
  cmd.add_option("--name", o.network_name,
                 "network name of the generated config (\"\" = the primary's; the default gives way to the "
                 "name the node's pods are attached under: an existing generated config's or a Multus config's)")
      ->capture_default_str();
  cmd.add_option("--config-template", o.config_template, "config template file (default: built-in)");
  cmd.add_option("--poll-interval", o.poll_interval_ms, "watch period in milliseconds")->capture_default_str();
  cmd.add_flag("--cleanup-on-exit", o.cleanup_on_exit, "remove the generated config when the watch stops");
  if (agent) return;  // the agent always watches, until SIGTERM
  cmd.add_flag("--watch", o.watch, "keep running; rewrite when the primary config or service account changes");
  cmd.add_option("--watch-iterations", o.watch_iterations, "stop the watch after N polls (0 = until SIGTERM)")
      ->capture_default_str();
  cmd.add_option("--primary-wait", o.primary_wait_s, "without --watch: seconds to wait for a primary config")
      ->capture_default_str();
  cmd.add_flag("--check", o.check, "only verify the installation (exit 0 when ready)");
}

// `manifold agent` and its flags: those of its installer thread, then its own.
CLI::App* add_agent_command(CLI::App& app, AgentCommandOptions& aopts) {
  auto* agent = app.add_subcommand(
      "agent",
      "the node agent (the DaemonSet's process): install as --watch does, and hot-plug networks into "
      "running pods when their networks annotation changes");
  add_install_flags(*agent, aopts.install, true);
  agent->add_flag("--no-install", aopts.no_install, "run only the hot-plug loop, not the installer");
  agent->add_option("--node-name", aopts.node_name, "this node's name (default: $NODE_NAME)");
  agent->add_option("--kubeconfig", aopts.kubeconfig, "the agent's kubeconfig (default: in-cluster service account)");
  agent->add_option("--cni-dir", aopts.cni_dir, "manifold's cache directory (cniDir)")->capture_default_str();
  agent->add_option("--metrics-address", aopts.metrics_address, "loopback address of /metrics, /healthz and /readyz")
      ->capture_default_str();
  agent->add_option("--watch-timeout", aopts.watch_timeout_s, "seconds after which the server ends each WATCH")
      ->capture_default_str();
  agent->add_option("--idle-timeout", aopts.idle_timeout_s, "seconds a silent watch stream is kept")
      ->capture_default_str();
  agent->add_option("--max-backoff", aopts.max_backoff_ms, "longest wait between retries, in milliseconds")
      ->capture_default_str();
  agent
      ->add_option("--api-qps", aopts.api_qps,
                   "ceiling on the agent's own API requests per second (list, watch, hot-plug; not the relay's)")
      ->capture_default_str();
  agent->add_option("--api-burst", aopts.api_burst, "API requests the agent may send at once above --api-qps")
      ->capture_default_str();
  agent
      ->add_option("--relay-socket", aopts.relay_socket,
                   "Unix socket on which CNI calls hand the agent their API requests (\"\" = none)")
      ->capture_default_str();
  agent->add_flag("--no-lookups{false}", aopts.lookups,
                  "the relay forwards every lookup upstream instead of answering from its pod and NAD caches");
  agent->add_option("--log-level", aopts.log_level, "error, verbose or debug")->capture_default_str();
  return agent;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "manifold: a CNI meta-plugin. Run by the container runtime with CNI_COMMAND set; "
      "otherwise a tool for operators."};
  app.require_subcommand(1);

  auto* version = app.add_subcommand("version", "print the version, commit, CNI versions and build flags");

  ValidateOptions vopts;
  auto* validate = app.add_subcommand(
      "validate", "check configs and manifests without running anything; exit 0 valid, 1 invalid, 2 usage");
  validate->add_option("config", vopts.files,
                       "meta-plugin/network configs (.conf, .conflist, .json) or manifests (.yaml: NADs, pods)");
  validate->add_option("--nad", vopts.nad_files, "files holding NetworkAttachmentDefinitions (YAML or JSON)");
  validate->add_flag("-q,--quiet", vopts.quiet, "print errors only");

  InspectOptions iopts;
  auto* inspect = app.add_subcommand("inspect", "show what the cache holds: every container, or one");
  inspect->add_option("containerID", iopts.container_id, "container ID or a unique prefix of it");
  inspect->add_option("--cni-dir", iopts.cni_dir, "manifold's cache directory (cniDir)")->capture_default_str();
  inspect->add_flag("--json", iopts.json, "print JSON");

  InstallOptions install_opts;
  auto* install = app.add_subcommand("install", "install the binary and config on this node (the DaemonSet runs this)");
  add_install_flags(*install, install_opts);

  AgentCommandOptions aopts;
  auto* agent = add_agent_command(app, aopts);

  GcOptions gopts;
  auto* gc = app.add_subcommand(
      "gc", "release (DEL without a namespace) and remove cache entries whose network namespace no longer exists");
  gc->add_option("--cni-dir", gopts.cni_dir, "manifold's cache directory (cniDir)")->capture_default_str();
  gc->add_option("--bin-dir", gopts.bin_dir, "where delegate plugins are looked up first (binDir)")
      ->capture_default_str();
  gc->add_option("--delegate-timeout", gopts.delegate_timeout_s, "seconds each delegate DEL may take")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  gc->add_flag("--dry-run", gopts.dry_run, "only print the plan: what would be DELeted and removed");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (*version) return print_version();
  if (*validate) return run_validate(vopts);
  if (*inspect) return run_inspect(iopts);
  if (*install) return run_install(install_opts);
  if (*agent) return run_agent(aopts);
  if (*gc) return run_gc(gopts);
  return 2;
}

}  // namespace manifold::plugin
