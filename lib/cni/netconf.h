// The manifold meta-plugin configuration: every Multus thin-plugin key, read from the stdin config
// with strict types (a wrong type is CNI error 7 naming the key) and Multus's defaults. The keys,
// their types and bounds are the schema in cni/meta_schema.h, shared with `manifold validate`.
// Unknown keys are ignored. manifold's own additions are `returnAllResults`, `delegateTimeout` and
// `readinessTimeout`; the scoping keys belong to the scoping module.
#pragma once

#include <string>
#include <vector>

#include "util/json.h"
#include "util/log.h"

namespace manifold::cni {

/// Log rotation settings (`logOptions`).
struct LogOptions {
  int max_size_mb = 100;  ///< rotate when the file exceeds this size
  int max_backups = 5;    ///< rotated files kept
  int max_age_days = 5;   ///< rotated files older than this are removed
  bool compress = true;   ///< gzip rotated files
};

/// The parsed meta-plugin config.
struct MetaConfig {
  std::string cni_version;                                       ///< cniVersion (validated by the dispatcher)
  std::string name;                                              ///< name
  std::string type;                                              ///< type
  std::vector<Json> delegates;                                   ///< inline confs/conflists; first = cluster network
  std::string cluster_network;                                   ///< clusterNetwork (name, file, dir, or NAD name)
  std::vector<std::string> default_networks;                     ///< defaultNetworks
  std::string kubeconfig;                                        ///< kubeconfig path
  std::string conf_dir = "/etc/cni/multus/net.d";                ///< confDir
  std::string cni_dir = "/var/lib/cni/manifold";                 ///< cniDir: manifold's cache
  std::string multus_cni_dir = "/var/lib/cni/multus";            ///< multusCniDir (ours): Multus's cache ("" = never)
  std::string bin_dir = "/opt/cni/bin";                          ///< binDir: searched before CNI_PATH
  std::string readiness_indicator_file;                          ///< readinessindicatorfile
  int readiness_timeout_s = 45;                                  ///< readinessTimeout (ours): bound of the wait
  std::string log_file;                                          ///< logFile
  util::LogLevel log_level = util::LogLevel::Panic;              ///< logLevel
  bool log_level_valid = true;                                   ///< false when logLevel had an unknown value
  bool log_to_stderr = true;                                     ///< logToStderr
  LogOptions log_options;                                        ///< logOptions
  bool namespace_isolation = false;                              ///< namespaceIsolation
  std::string global_namespaces;                                 ///< globalNamespaces (comma-separated)
  bool global_namespaces_set = false;                            ///< whether globalNamespaces was given
  std::vector<std::string> system_namespaces = {"kube-system"};  ///< systemNamespaces
  std::string multus_namespace = "kube-system";                  ///< multusNamespace
  bool retry_delete_on_error = false;                            ///< retryDeleteOnError
  std::string auxiliary_cni_chain_name;                          ///< auxiliaryCNIChainName
  Json capabilities = Json::object();                            ///< capabilities
  Json runtime_config = Json::object();                          ///< runtimeConfig (from the runtime)
  bool return_all_results = false;                               ///< returnAllResults (ours)
  int delegate_timeout_s = 60;                                   ///< delegateTimeout (ours): seconds per delegate call
  /// delegateEnv (ours): extra variables of the runtime's environment passed on to delegates
  /// (names, or prefixes ending in `*`), besides the built-in allow-list.
  std::vector<std::string> delegate_env;
  int api_request_timeout_ms = 3000;   ///< apiTimeouts.request (ours): bound of one API request
  int api_call_deadline_ms = 10000;    ///< apiTimeouts.call (ours): bound of one call with retries
  int api_lookup_deadline_ms = 30000;  ///< apiTimeouts.total (ours): bound of all calls of one verb
  int api_attempts = 5;                ///< apiTimeouts.attempts (ours): tries per call
  bool api_pipelining = true;          ///< apiPipelining (ours): batches of API requests share a round trip
  /// agentSocket (ours): the node agent's API relay; "" = always call the API server directly.
  std::string agent_socket = "/run/manifold/agent.sock";
  std::string kubelet_checkpoint_file = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint";
  ///< kubeletCheckpointFile (ours): device allocations
  std::string device_info_dir = "/var/run/k8s.cni.cncf.io/devinfo";  ///< deviceInfoDir (ours)
  /// podResourcesSocket (ours): the kubelet's PodResources socket ("" = never ask the kubelet).
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  int kubelet_timeout_s = 10;     ///< kubeletTimeout (ours): seconds for the PodResources List, connect included
  Json scoping = Json::object();  ///< sourceRouting/mesh defaults, validated elsewhere
  /// multiNetworkPolicy (ours): MultiNetworkPolicy enforcement, null when absent; validated by
  /// the policy module (policy/policy_config.h).
  Json multi_network_policy;
  Json raw;  ///< the whole config as given
};

/// Reads a MetaConfig from the parsed stdin object. Throws CniError(InvalidConfig) naming the key
/// on a wrong type or an out-of-range value (the first, in schema order), and when neither
/// `delegates` nor `clusterNetwork` is set.
MetaConfig parse_meta_config(const Json& config);

/// Checks that a delegate config (conf or conflist) is an object with a valid shape: a conf has a
/// string "type"; a conflist has a non-empty "plugins" list of objects with string "type".
/// `where` names it in the error (e.g. "delegates[1]").
void validate_delegate_shape(const Json& delegate, const std::string& where);

/// True if the delegate config is a conflist (has "plugins" and no top-level "type").
bool is_conflist(const Json& delegate);

/// The "name" of a delegate config, or "".
std::string delegate_name(const Json& delegate);

}  // namespace manifold::cni
