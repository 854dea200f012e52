// Kubernetes credentials: the kubeconfig loader (yaml-cpp) and the in-cluster service-account
// configuration. Both produce a ClusterAuth, the plain data the HTTPS transport and the API client
// need: server URL, trust anchor, client certificate and bearer token. Files referenced by the
// kubeconfig are read here (relative to the kubeconfig's directory) and their `-data` forms base64-
// decoded; only `tokenFile` is kept as a path, because it is re-read on every invocation so that
// rotated service-account tokens keep working. Errors name the file and field, never a secret.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/env.h"
#include "util/file_reader.h"

namespace manifold::http {

/// Everything needed to reach and authenticate to one API server.
struct ClusterAuth {
  std::string server;                     ///< "https://host:port[/prefix]", validated
  std::string ca_pem;                     ///< trust anchor(s), PEM; empty when none was configured
  bool insecure_skip_tls_verify = false;  ///< never together with ca_pem
  std::string client_cert_pem;            ///< client certificate chain, PEM (empty: none)
  std::string client_key_pem;             ///< its private key, PEM (empty: none)
  std::string token;                      ///< static bearer token (empty: none)
  std::string token_file;                 ///< absolute or cwd-relative path, read at first use; wins over token
};

/// The service-account directory mounted into every pod.
inline constexpr std::string_view kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Loads `path`: current-context → context → cluster + user. Throws CniError(InvalidConfig) naming
/// the kubeconfig and the missing or invalid field (or CniError(Io) wrapped the same way when a
/// referenced file cannot be read). Logs a warning for insecure-skip-tls-verify and for auth
/// mechanisms manifold does not implement (exec, auth-provider, basic auth, impersonation).
ClusterAuth load_kubeconfig(const std::string& path, util::FileReader& files);

/// The in-cluster configuration: nullopt unless both KUBERNETES_SERVICE_HOST and
/// KUBERNETES_SERVICE_PORT are set and non-empty; then https://host:port with the service
/// account's ca.crt (read now) and token (as token_file). Throws CniError(InvalidConfig) when the
/// variables are malformed or ca.crt cannot be read.
std::optional<ClusterAuth> in_cluster_auth(const util::EnvSource& env, util::FileReader& files);

/// Chooses how to reach Kubernetes, as Multus does: the kubeconfig when `kubeconfig_path` is
/// non-empty, else the in-cluster configuration, else nullopt (no Kubernetes at all).
std::optional<ClusterAuth> find_cluster_auth(const std::string& kubeconfig_path, const util::EnvSource& env,
                                             util::FileReader& files);

/// True when `token` is usable in an `Authorization: Bearer` header: non-empty, at most 64 KiB,
/// printable ASCII without spaces.
bool is_valid_bearer_token(std::string_view token);

/// Decodes standard base64 (padding optional, whitespace ignored); nullopt when malformed.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace manifold::http
