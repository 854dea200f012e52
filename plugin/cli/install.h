// `manifold install`: what the node installer (the DaemonSet) runs. It copies the binary into the
// CNI bin dir atomically, writes a kubeconfig that references the service-account token *file* and
// CA file (copied next to it, so the host sees them; the token is never embedded), generates
// 00-manifold.conf/.conflist wrapping the node's primary CNI config, and with --watch keeps all of
// it current until SIGTERM. Every write is a temp file + fsync + rename; unchanged files are not
// rewritten. With --check it only verifies an installation (the DaemonSet's readiness probe).
#pragma once

#include <string>

namespace manifold::plugin {

/// Settings of an installation (flags of `manifold install`).
struct InstallOptions {
  std::string bin_source;                   ///< binary to install; "" = this executable
  std::string bin_dir = "/opt/cni/bin";     ///< where CNI plugins live
  std::string binary_name = "manifold";     ///< file name in bin_dir
  bool skip_binary = false;                 ///< do not copy the binary
  std::string conf_dir = "/etc/cni/net.d";  ///< the runtime's CNI config dir
  std::string kubeconfig_dir;               ///< "" = <conf_dir>/manifold.d
  std::string kubeconfig_host_dir;          ///< the same dir as the host sees it; "" = kubeconfig_dir
  bool no_kubeconfig = false;               ///< standalone: write no kubeconfig and no "kubeconfig" key
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";  ///< token, ca.crt
  bool reference_service_account = false;  ///< point at the SA files in place instead of copying them
  std::string api_server;                  ///< "" = https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
  std::string cni_version;                 ///< "" = the primary's
  bool force_cni_version = false;          ///< override a differing primary cniVersion
  std::string network_name = "manifold-cni-network";  ///< name of the generated network; "" = primary's
  std::string config_template;                        ///< template file; "" = built-in
  bool watch = false;                                 ///< keep running and rewrite on change
  int poll_interval_ms = 1000;                        ///< watch period
  long watch_iterations = 0;                          ///< stop after this many polls (0 = until SIGTERM)
  int primary_wait_s = 0;                             ///< without --watch: how long to wait for a primary config
  bool cleanup_on_exit = false;                       ///< remove the generated config when --watch ends
  bool check = false;                                 ///< only verify the installation
};

/// Runs the installation, logging to stderr at verbose level; returns the process exit code (0 ok,
/// 1 failure, 2 usage).
int run_install(const InstallOptions& options);
/// The same with the logging left as the caller set it up (`manifold agent`'s installer thread).
int run_installation(const InstallOptions& options);

}  // namespace manifold::plugin
