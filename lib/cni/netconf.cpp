// Implementation of meta-plugin config parsing: typed accessors that name the offending key, the
// Multus defaults, and delegate shape validation.
#include "cni/netconf.h"

#include "cni/error.h"
#include "util/env.h"

namespace manifold::cni {

namespace {

[[noreturn]] void wrong_type(const std::string& key, const char* expected) {
  throw_invalid_config("invalid config: key \"" + key + "\" must be " + expected);
}

void read_string(const Json& c, const char* key, std::string& out) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return;
  if (!it->is_string()) wrong_type(key, "a string");
  out = it->get<std::string>();
}

void read_bool(const Json& c, const char* key, bool& out) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return;
  if (!it->is_boolean()) wrong_type(key, "a boolean");
  out = it->get<bool>();
}

void read_int(const Json& c, const std::string& key, const Json& value, int lo, int hi, int& out) {
  if (value.is_null()) return;
  if (!value.is_number_integer() && !value.is_number_unsigned()) wrong_type(key, "an integer");
  auto v = value.get<long long>();
  if (v < lo || v > hi)
    throw_invalid_config("invalid config: key \"" + key + "\" must be between " +
                         std::to_string(lo) + " and " + std::to_string(hi));
  out = static_cast<int>(v);
  (void)c;
}

void read_int(const Json& c, const char* key, int lo, int hi, int& out) {
  auto it = c.find(key);
  if (it == c.end()) return;
  read_int(c, key, *it, lo, hi, out);
}

void read_string_list(const Json& c, const char* key, std::vector<std::string>& out) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return;
  if (!it->is_array()) wrong_type(key, "a list of strings");
  out.clear();
  for (const auto& v : *it) {
    if (!v.is_string()) wrong_type(key, "a list of strings");
    out.push_back(v.get<std::string>());
  }
}

void read_object(const Json& c, const char* key, Json& out) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return;
  if (!it->is_object()) wrong_type(key, "an object");
  out = *it;
}

}  // namespace

bool is_conflist(const Json& delegate) {
  return delegate.is_object() && delegate.contains("plugins") && !delegate.contains("type");
}

std::string delegate_name(const Json& delegate) {
  auto it = delegate.find("name");
  return it != delegate.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void validate_delegate_shape(const Json& delegate, const std::string& where) {
  if (!delegate.is_object()) throw_invalid_config("invalid config: " + where + " must be an object");
  if (delegate.contains("cniVersion") && !delegate["cniVersion"].is_string())
    throw_invalid_config("invalid config: " + where + ".cniVersion must be a string");
  if (delegate.contains("name") && !delegate["name"].is_string())
    throw_invalid_config("invalid config: " + where + ".name must be a string");
  if (!is_conflist(delegate)) {
    auto it = delegate.find("type");
    if (it == delegate.end())
      throw_invalid_config("invalid config: " + where + " has neither \"type\" nor \"plugins\"");
    if (!it->is_string() || it->get<std::string>().empty())
      throw_invalid_config("invalid config: " + where + ".type must be a non-empty string");
    return;
  }
  const Json& plugins = delegate["plugins"];
  if (!plugins.is_array() || plugins.empty())
    throw_invalid_config("invalid config: " + where + ".plugins must be a non-empty list");
  for (size_t i = 0; i < plugins.size(); ++i) {
    std::string pw = where + ".plugins[" + std::to_string(i) + "]";
    if (!plugins[i].is_object()) throw_invalid_config("invalid config: " + pw + " must be an object");
    auto t = plugins[i].find("type");
    if (t == plugins[i].end() || !t->is_string() || t->get<std::string>().empty())
      throw_invalid_config("invalid config: " + pw + ".type must be a non-empty string");
  }
}

MetaConfig parse_meta_config(const Json& c) {
  MetaConfig m;
  m.raw = c;
  read_string(c, "cniVersion", m.cni_version);
  read_string(c, "name", m.name);
  if (m.name.empty())  // the spec requires it; manifold keys its cache entries by it
    throw_invalid_config("invalid config: \"name\" (the network name) must be set");
  read_string(c, "type", m.type);
  read_string(c, "clusterNetwork", m.cluster_network);
  read_string_list(c, "defaultNetworks", m.default_networks);
  read_string(c, "kubeconfig", m.kubeconfig);
  read_string(c, "confDir", m.conf_dir);
  read_string(c, "cniDir", m.cni_dir);
  read_string(c, "binDir", m.bin_dir);
  read_string(c, "readinessindicatorfile", m.readiness_indicator_file);
  read_int(c, "readinessTimeout", 0, 3600, m.readiness_timeout_s);
  read_string(c, "logFile", m.log_file);
  std::string level;
  read_string(c, "logLevel", level);
  if (!level.empty()) m.log_level_valid = util::parse_log_level(level, m.log_level);
  read_bool(c, "logToStderr", m.log_to_stderr);
  if (auto it = c.find("logOptions"); it != c.end() && !it->is_null()) {
    if (!it->is_object()) wrong_type("logOptions", "an object");
    read_int(*it, "logOptions.maxSize", (*it).value("maxSize", Json()), 0, 1 << 20, m.log_options.max_size_mb);
    read_int(*it, "logOptions.maxBackups", (*it).value("maxBackups", Json()), 0, 1000, m.log_options.max_backups);
    read_int(*it, "logOptions.maxAge", (*it).value("maxAge", Json()), 0, 100000, m.log_options.max_age_days);
    if (it->contains("compress") && !(*it)["compress"].is_null()) {
      if (!(*it)["compress"].is_boolean()) wrong_type("logOptions.compress", "a boolean");
      m.log_options.compress = (*it)["compress"].get<bool>();
    }
  }
  read_bool(c, "namespaceIsolation", m.namespace_isolation);
  if (c.contains("globalNamespaces") && !c["globalNamespaces"].is_null()) {
    read_string(c, "globalNamespaces", m.global_namespaces);
    m.global_namespaces_set = true;
  }
  read_string_list(c, "systemNamespaces", m.system_namespaces);
  read_string(c, "multusNamespace", m.multus_namespace);
  read_bool(c, "retryDeleteOnError", m.retry_delete_on_error);
  read_string(c, "auxiliaryCNIChainName", m.auxiliary_cni_chain_name);
  read_object(c, "capabilities", m.capabilities);
  read_object(c, "runtimeConfig", m.runtime_config);
  read_bool(c, "returnAllResults", m.return_all_results);
  read_int(c, "delegateTimeout", 1, 3600, m.delegate_timeout_s);
  read_string_list(c, "delegateEnv", m.delegate_env);
  for (size_t i = 0; i < m.delegate_env.size(); ++i)
    if (!util::is_env_name_pattern(m.delegate_env[i]))
      throw_invalid_config("invalid config: delegateEnv[" + std::to_string(i) +
                           "] must be a variable name (letters, digits, _) or a prefix ending in *");
  if (auto it = c.find("apiTimeouts"); it != c.end() && !it->is_null()) {
    if (!it->is_object()) wrong_type("apiTimeouts", "an object");
    read_int(*it, "apiTimeouts.request", it->value("request", Json()), 10, 600000, m.api_request_timeout_ms);
    read_int(*it, "apiTimeouts.call", it->value("call", Json()), 10, 600000, m.api_call_deadline_ms);
    read_int(*it, "apiTimeouts.total", it->value("total", Json()), 10, 3600000, m.api_lookup_deadline_ms);
    read_int(*it, "apiTimeouts.attempts", it->value("attempts", Json()), 1, 100, m.api_attempts);
  }
  read_string(c, "kubeletCheckpointFile", m.kubelet_checkpoint_file);
  read_string(c, "deviceInfoDir", m.device_info_dir);
  for (const char* key : {"sourceRouting", "mesh"}) {
    auto it = c.find(key);
    if (it == c.end() || it->is_null()) continue;
    if (!it->is_object()) wrong_type(key, "an object");
    m.scoping[key] = *it;
  }

  if (auto it = c.find("delegates"); it != c.end() && !it->is_null()) {
    if (!it->is_array()) wrong_type("delegates", "a list of network configs");
    for (size_t i = 0; i < it->size(); ++i) {
      validate_delegate_shape((*it)[i], "delegates[" + std::to_string(i) + "]");
      m.delegates.push_back((*it)[i]);
    }
  }
  if (m.delegates.empty() && m.cluster_network.empty())
    throw_invalid_config("invalid config: at least one delegate or clusterNetwork must be specified");
  if (m.cni_dir.empty()) throw_invalid_config("invalid config: key \"cniDir\" must not be empty");
  return m;
}

}  // namespace manifold::cni
