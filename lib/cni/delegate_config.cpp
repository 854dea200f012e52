// Implementation of runtimeConfig injection, conflist plugin stdin and prevResult splicing.
#include "cni/delegate_config.h"

#include "cni/error.h"
#include "cni/netconf.h"
#include "cni/version.h"

namespace manifold::cni {

Json inject_runtime_config(const Json& plugin, const Json& runtime_config) {
  Json out = plugin;
  auto caps = plugin.find("capabilities");
  if (caps == plugin.end() || !caps->is_object() || !runtime_config.is_object()) return out;
  Json rc = Json::object();
  for (auto it = caps->begin(); it != caps->end(); ++it) {
    if (!it.value().is_boolean() || !it.value().get<bool>()) continue;
    auto v = runtime_config.find(it.key());
    if (v != runtime_config.end()) rc[it.key()] = *v;
  }
  if (!rc.empty()) out["runtimeConfig"] = rc;
  return out;
}

Json prepare_delegate(const Json& delegate, const Json& runtime_config, const std::string& default_version) {
  Json out;
  if (is_conflist(delegate)) {
    out = delegate;
    for (auto& p : out["plugins"]) p = inject_runtime_config(p, runtime_config);
  } else {
    out = inject_runtime_config(delegate, runtime_config);
  }
  if (!out.contains("cniVersion")) out["cniVersion"] = default_version;
  return out;
}

std::string chain_plugin_stdin(const Json& plugin, const std::string& list_name, const std::string& list_version,
                               const Json& prev_result) {
  Json conf = plugin;
  conf["name"] = list_name;
  conf["cniVersion"] = list_version;
  if (!prev_result.is_null()) conf["prevResult"] = prev_result;
  return conf.dump();
}

std::string with_prev_result(const std::string& conf_text, const std::string& prev_result_text) {
  Json conf = Json::parse(conf_text, nullptr, false);
  // nlohmann stops at a NUL byte, so text after one would be ignored here but spliced into below.
  if (conf.is_discarded() || !conf.is_object() || conf_text.find('\0') != std::string::npos)
    throw CniError(ErrorCode::Decoding, "cached delegate config is not a JSON object");
  if (conf.contains("prevResult")) {
    conf["prevResult"] = Json::parse(prev_result_text);
    return conf.dump();
  }
  size_t close = conf_text.find_last_of('}');
  std::string head = conf_text.substr(0, close);
  size_t last = head.find_last_not_of(" \t\r\n");
  bool empty_object = last != std::string::npos && head[last] == '{';
  return head + (empty_object ? "" : ",") + "\"prevResult\":" + prev_result_text + conf_text.substr(close);
}

std::string delegate_version(const Json& delegate) {
  auto it = delegate.find("cniVersion");
  return it != delegate.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool version_at_least(const std::string& version, int major, int minor) {
  auto v = SpecVersion::parse(version);
  return v && *v >= SpecVersion{major, minor, 0};
}

}  // namespace manifold::cni
