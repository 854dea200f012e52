// Implementation of the meta-config schema: the table of keys in the order parse_meta_config has
// always checked them, the rules of the keys that need more than a type check, and the walk.
#include "cni/meta_schema.h"

#include <algorithm>
#include <type_traits>

#include "util/env.h"
#include "util/log.h"

namespace manifold::cni {

namespace {

const char* const kVariableName = "must be a variable name (letters, digits, _) or a prefix ending in *";

// A NUL byte in a string of the config ("\u0000" in JSON) would cut a path, a name or a namespace
// short where it reaches the kernel or libc: manifold would use another file than the one named.
bool has_nul(const Json& v) { return v.get_ref<const std::string&>().find('\0') != std::string::npos; }

// Stores a value into the MetaConfig member `M` (or the member `I` of member `M`).
template <auto M>
void put(MetaConfig& m, const Json& v) {
  m.*M = v.get<std::remove_cvref_t<decltype(m.*M)>>();
}
template <auto M, auto I>
void put_in(MetaConfig& m, const Json& v) {
  (m.*M).*I = v.get<std::remove_cvref_t<decltype((m.*M).*I)>>();
}

void put_global_namespaces(MetaConfig& m, const Json& v) {
  m.global_namespaces = v.get<std::string>();
  m.global_namespaces_set = true;
}

void put_log_level(MetaConfig& m, const Json& v) {
  const auto& level = v.get_ref<const std::string&>();
  if (!level.empty()) m.log_level_valid = util::parse_log_level(level, m.log_level);
}

void cni_version_rule(const Json& v, MetaWalk& w) {
  if (w.offline() && !v.is_null()) validate_cni_version(v, w.path(), w.reader().report().problems());
}

// The spec requires a network name; manifold keys its cache entries by it. In a conflist the
// runtime injects the list's name.
void name_rule(const Json& v, MetaWalk& w) {
  if (w.in_list || (v.is_string() && !v.get_ref<const std::string&>().empty())) return;
  w.reader().report().error(w.path(), "must be a non-empty string (the network name; CNI requires it)",
                            "invalid config: \"name\" (the network name) must be set");
}

// The plugin type: the runtime has already found the plugin by it, so a CNI call accepts "".
void type_rule(const Json& v, MetaWalk& w) {
  if (v.is_null()) return;  // validation reports a missing type after the walk
  if (!v.is_string()) {
    w.bad("must be a non-empty string", "must be a string");
  } else if (w.offline() && v.get_ref<const std::string&>().empty()) {
    w.bad("must be a non-empty string", "must not be empty");
  } else {
    w.out.type = v.get<std::string>();
  }
}

void log_level_rule(const Json& v, MetaWalk& w) {
  util::LogLevel level;
  if (w.offline() && !v.is_null() && !util::parse_log_level(v.get_ref<const std::string&>(), level))
    w.bad("must be one of panic, error, verbose, debug", "");
}

// A CNI call checks that every entry is a string before it checks any name.
void delegate_env_rule(const Json& v, MetaWalk& w) {
  if (v.is_null()) return;
  const std::string as_list = "invalid config: key \"delegateEnv\" must be a list of strings";
  if (!v.is_array()) {
    w.bad("must be a list of variable names", "must be a list of strings");
    return;
  }
  bool strings = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].is_string()) continue;
    w.reader().report().error(json_path_index(w.path(), i), kVariableName, as_list);
    strings = false;
  }
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].is_string() && !util::is_env_name_pattern(v[i].get_ref<const std::string&>()))
      w.reader().report().error(json_path_index(w.path(), i), kVariableName,
                                "invalid config: delegateEnv[" + std::to_string(i) + "] " + kVariableName);
  if (strings) w.out.delegate_env = v.get<std::vector<std::string>>();
}

void capabilities_rule(const Json& v, MetaWalk& w) {
  if (v.is_null()) return;
  if (!v.is_object()) {
    w.bad("must be an object of booleans", "must be an object");
    return;
  }
  if (w.offline()) validate_capabilities(v, w.path(), w.reader().report().problems());
  w.out.capabilities = v;
}

// `mesh` and `sourceRouting`: defaults for every attachment, checked in full by the scoping module.
void scoping_rule(const Json& v, MetaWalk& w) {
  if (v.is_null()) return;
  if (!v.is_object()) {
    w.bad("must be an object", "must be an object");
    return;
  }
  if (w.offline() && w.scoping && *w.scoping) (*w.scoping)(w.key(), v, w.path(), w.reader().report().problems());
  w.out.scoping[std::string(w.key())] = v;
}

// `multiNetworkPolicy`: an object, read in full by the policy module (the engine at ADD, CHECK;
// `manifold validate` through the same checker as the scoping keys).
void policy_rule(const Json& v, MetaWalk& w) {
  if (v.is_null()) return;
  if (!v.is_object()) {
    w.bad("must be an object", "must be an object");
    return;
  }
  if (w.offline() && w.scoping && *w.scoping) (*w.scoping)(w.key(), v, w.path(), w.reader().report().problems());
  w.out.multi_network_policy = v;
}

// A CNI call checks each delegate's shape; validation checks each as a whole network config.
void delegates_rule(const Json& v, MetaWalk& w) {
  if (v.is_null()) return;
  if (!v.is_array()) {
    w.bad("must be a list of network configs", "must be a list of network configs");
    return;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (w.offline()) {
      std::string path = json_path_index(w.path(), i);
      Problems& out = w.reader().report().problems();
      validate_network_config(v[i], path, out, w.scoping ? *w.scoping : ScopingChecker());
      if (v[i].is_object() && !v[i].contains("name"))
        out.push_back(
            {path, "has no \"name\"; the delegate's result cache and network-status entry will be unnamed", true});
    } else {
      validate_delegate_shape(v[i], "delegates[" + std::to_string(i) + "]");
    }
    w.out.delegates.push_back(v[i]);
  }
}

using M = MetaConfig;
using T = MetaType;

constexpr MetaField kLogOptions[] = {
    {"maxSize", T::Int, 0, 1 << 20, put_in<&M::log_options, &LogOptions::max_size_mb>},
    {"maxBackups", T::Int, 0, 1000, put_in<&M::log_options, &LogOptions::max_backups>},
    {"maxAge", T::Int, 0, 100000, put_in<&M::log_options, &LogOptions::max_age_days>},
    {"compress", T::Bool, 0, 0, put_in<&M::log_options, &LogOptions::compress>},
};

constexpr MetaField kApiTimeouts[] = {
    {"request", T::Int, 10, 600000, put<&M::api_request_timeout_ms>},
    {"call", T::Int, 10, 600000, put<&M::api_call_deadline_ms>},
    {"total", T::Int, 10, 3600000, put<&M::api_lookup_deadline_ms>},
    {"attempts", T::Int, 1, 100, put<&M::api_attempts>},
};

constexpr MetaField kFields[] = {
    {"cniVersion", T::String, 0, 0, put<&M::cni_version>, cni_version_rule},
    {"name", T::String, 0, 0, put<&M::name>, name_rule},
    {"type", T::Custom, 0, 0, nullptr, type_rule},
    {"clusterNetwork", T::String, 0, 0, put<&M::cluster_network>},
    {"defaultNetworks", T::StringList, 0, 0, put<&M::default_networks>},
    {"kubeconfig", T::String, 0, 0, put<&M::kubeconfig>},
    {"confDir", T::String, 0, 0, put<&M::conf_dir>},
    {"cniDir", T::NonEmptyString, 0, 0, put<&M::cni_dir>},
    {"multusCniDir", T::String, 0, 0, put<&M::multus_cni_dir>},
    {"binDir", T::String, 0, 0, put<&M::bin_dir>},
    {"readinessindicatorfile", T::String, 0, 0, put<&M::readiness_indicator_file>},
    {"readinessTimeout", T::Int, 0, 3600, put<&M::readiness_timeout_s>},
    {"logFile", T::String, 0, 0, put<&M::log_file>},
    {"logLevel", T::String, 0, 0, put_log_level, log_level_rule},
    {"logToStderr", T::Bool, 0, 0, put<&M::log_to_stderr>},
    {"logOptions", T::Section, 0, 0, nullptr, nullptr, kLogOptions},
    {"namespaceIsolation", T::Bool, 0, 0, put<&M::namespace_isolation>},
    {"globalNamespaces", T::String, 0, 0, put_global_namespaces},
    {"systemNamespaces", T::StringList, 0, 0, put<&M::system_namespaces>},
    {"multusNamespace", T::String, 0, 0, put<&M::multus_namespace>},
    {"retryDeleteOnError", T::Bool, 0, 0, put<&M::retry_delete_on_error>},
    {"auxiliaryCNIChainName", T::String, 0, 0, put<&M::auxiliary_cni_chain_name>},
    {"capabilities", T::Custom, 0, 0, nullptr, capabilities_rule},
    {"runtimeConfig", T::Object, 0, 0, put<&M::runtime_config>},
    {"returnAllResults", T::Bool, 0, 0, put<&M::return_all_results>},
    {"delegateTimeout", T::Int, 1, 3600, put<&M::delegate_timeout_s>},
    {"delegateEnv", T::Custom, 0, 0, nullptr, delegate_env_rule},
    {"apiTimeouts", T::Section, 0, 0, nullptr, nullptr, kApiTimeouts},
    {"apiPipelining", T::Bool, 0, 0, put<&M::api_pipelining>},
    {"agentSocket", T::String, 0, 0, put<&M::agent_socket>},
    {"kubeletCheckpointFile", T::String, 0, 0, put<&M::kubelet_checkpoint_file>},
    {"deviceInfoDir", T::String, 0, 0, put<&M::device_info_dir>},
    {"podResourcesSocket", T::String, 0, 0, put<&M::pod_resources_socket>},
    {"kubeletTimeout", T::Int, 1, 300, put<&M::kubelet_timeout_s>},
    {"sourceRouting", T::Custom, 0, 0, nullptr, scoping_rule},
    {"mesh", T::Custom, 0, 0, nullptr, scoping_rule},
    {"multiNetworkPolicy", T::Custom, 0, 0, nullptr, policy_rule},
    {"delegates", T::Custom, 0, 0, nullptr, delegates_rule},
    {"prevResult", T::Object, 0, 0, nullptr, nullptr, {}, true},
    {"args", T::Object, 0, 0, nullptr, nullptr, {}, true},
};

}  // namespace

std::span<const MetaField> meta_fields() { return kFields; }

MetaWalk::MetaWalk(const Json& config, const std::string& path, ProblemReport& report, MetaConfig& out, bool in_list,
                   const ScopingChecker* scoping)
    : out(out), in_list(in_list), scoping(scoping), root_(config, path, "", report), at_(&root_) {}

void MetaWalk::run() {
  walk(root_, kFields);
  const Json* delegates = root_.get("delegates");
  if (out.delegates.empty() && out.cluster_network.empty() && !(delegates && !delegates->is_array()))
    root_.report().error(root_.path(), "at least one delegate or clusterNetwork must be specified",
                         "invalid config: at least one delegate or clusterNetwork must be specified");
}

bool MetaWalk::bad(const std::string& message, const std::string& why) const {
  at_->fail(key_, message, "invalid config: key \"" + at_->name_of(key_) + "\" " + why);
  return false;
}

void MetaWalk::walk(const ConfigReader& r, std::span<const MetaField> fields) {
  static const Json null_value;
  for (const MetaField& f : fields) {
    if (f.offline && !offline()) continue;
    at_ = &r;
    key_ = f.key;
    const Json* found = r.get(f.key);
    const Json& v = found ? *found : null_value;
    if (f.type != MetaType::Custom && !v.is_null()) {
      if (!check_type(f, v)) continue;
      if (f.type == MetaType::Section)
        walk_section(f, v);
      else if (f.store)
        f.store(out, v);
    }
    at_ = &r;
    key_ = f.key;
    if (f.rule) f.rule(v, *this);
  }
}

// The keys of a section in table order, then a warning for each key it does not know.
void MetaWalk::walk_section(const MetaField& f, const Json& value) {
  const ConfigReader& parent = *at_;
  ConfigReader section = parent.child(f.key, value);
  walk(section, f.fields);
  std::string known;
  for (const MetaField& sub : f.fields) known += (known.empty() ? "" : ", ") + std::string(sub.key);
  for (auto it = value.begin(); it != value.end(); ++it) {
    bool listed = false;
    for (const MetaField& sub : f.fields) listed |= sub.key == it.key();
    if (!listed)
      section.report().warning(section.path_of(it.key()),
                               "unknown " + std::string(f.key) + " key (known: " + known + ")");
  }
}

bool MetaWalk::check_type(const MetaField& f, const Json& v) const {
  switch (f.type) {
    case MetaType::String:
      if (!v.is_string()) return bad("must be a string", "must be a string");
      return !has_nul(v) || bad("must not contain a NUL byte", "contains a NUL byte");
    case MetaType::NonEmptyString:
      if (!v.is_string()) return bad("must be a non-empty string", "must be a string");
      if (has_nul(v)) return bad("must not contain a NUL byte", "contains a NUL byte");
      return !v.get_ref<const std::string&>().empty() || bad("must be a non-empty string", "must not be empty");
    case MetaType::Bool:
      return v.is_boolean() || bad("must be a boolean (true or false)", "must be a boolean");
    case MetaType::Int: {
      if (!v.is_number_integer()) return bad("must be an integer", "must be an integer");
      // Non-negative numbers parse as unsigned; a huge one must not wrap into range.
      bool in_range = v.is_number_unsigned()
                          ? v.get<unsigned long long>() >= static_cast<unsigned long long>(std::max(f.lo, 0)) &&
                                v.get<unsigned long long>() <= static_cast<unsigned long long>(f.hi)
                          : v.get<long long>() >= f.lo && v.get<long long>() <= f.hi;
      std::string bounds = "must be between " + std::to_string(f.lo) + " and " + std::to_string(f.hi);
      return in_range || bad(bounds, bounds);
    }
    case MetaType::StringList:
      return check_list(v);
    case MetaType::Object:
    case MetaType::Section:
      return v.is_object() || bad("must be an object", "must be an object");
    case MetaType::Custom:
      break;
  }
  return true;
}

// A list of strings: a CNI call names the list, validation each entry that is not a string.
bool MetaWalk::check_list(const Json& v) const {
  if (!v.is_array()) return bad("must be a list of strings", "must be a list of strings");
  bool ok = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].is_string() && !has_nul(v[i])) continue;
    const bool string = v[i].is_string();
    at_->report().error(json_path_index(path(), i), string ? "must not contain a NUL byte" : "must be a string",
                        "invalid config: key \"" + at_->name_of(key_) + "\" " +
                            (string ? "contains a NUL byte" : "must be a list of strings"));
    ok = false;
  }
  return ok;
}

}  // namespace manifold::cni
