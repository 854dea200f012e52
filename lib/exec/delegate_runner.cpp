// Implementation of single-plugin and conflist execution for every verb.
#include "exec/delegate_runner.h"

#include <exception>
#include <optional>

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "cni/netconf.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace manifold::exec {

namespace {

Json parse_cached(const std::string& text) {
  Json j = util::parse_json_bounded(text);
  if (j.is_discarded() || !j.is_object())
    throw cni::CniError(cni::ErrorCode::Decoding, "cached delegate config is not a JSON object");
  // The text may come from a corrupt cache file: type_of() and the plugin loops need this shape.
  cni::validate_delegate_shape(j, "cached delegate config");
  return j;
}

PluginCall make_call(const char* command, const DelegateTarget& t, std::string config) {
  PluginCall call;
  call.command = command;
  call.container_id = t.container_id;
  call.netns = t.netns;
  call.ifname = t.ifname;
  call.cni_args = t.cni_args;
  call.cni_path = t.cni_path;
  call.config = std::move(config);
  return call;
}

[[noreturn]] void not_an_object(const std::string& type) {
  throw cni::CniError(cni::ErrorCode::DelegateFailed,
                      "plugin " + type + " returned an ADD result that is not a JSON object");
}

Json parse_result(const std::string& type, const std::string& text) {
  Json j = util::parse_json_bounded(text);
  if (j.is_discarded() || !j.is_object()) not_an_object(type);
  return j;
}

// parse_result's check alone, for a result nothing reads here (the caller decodes it).
void check_result(const std::string& type, const std::string& text) {
  if (util::json_type_bounded(text) != Json::value_t::object) not_an_object(type);
}

// Whether a DEL/CHECK of `version` may be given `cached_result` as prevResult at all (0.4.0+).
bool prev_result_applies(const std::string& version, const std::string& cached_result) {
  return !cached_result.empty() && cni::version_at_least(version, 0, 4);
}

// The result a 0.4.0+ DEL/CHECK gets as prevResult; null when there is none or it is too old.
Json prev_result_for(const std::string& version, const std::string& cached_result) {
  if (!prev_result_applies(version, cached_result)) return Json();
  Json j = util::parse_json_bounded(cached_result);
  return j.is_discarded() ? Json() : j;
}

// Whether prev_result_for(version, cached_result) is not null, without building it.
bool has_prev_result(const std::string& version, const std::string& cached_result) {
  if (!prev_result_applies(version, cached_result)) return false;
  Json::value_t t = util::json_type_bounded(cached_result);
  return t != Json::value_t::discarded && t != Json::value_t::null;
}

std::string type_of(const Json& plugin) { return plugin["type"].get<std::string>(); }

}  // namespace

std::string DelegateRunner::add(const std::string& config_text, const DelegateTarget& target) {
  Json conf = parse_cached(config_text);
  if (!cni::is_conflist(conf)) {
    std::string out = invoker_.invoke(type_of(conf), make_call("ADD", target, config_text));
    check_result(type_of(conf), out);
    return out;
  }
  std::string name = cni::delegate_name(conf);
  std::string version = cni::delegate_version(conf);
  Json prev;
  std::string out;
  for (const auto& plugin : conf["plugins"]) {
    std::string stdin_text = cni::chain_plugin_stdin(plugin, name, version, prev);
    out = invoker_.invoke(type_of(plugin), make_call("ADD", target, stdin_text));
    prev = parse_result(type_of(plugin), out);
  }
  return out;
}

void DelegateRunner::del(const std::string& config_text, const std::string& cached_result,
                         const DelegateTarget& target) {
  Json conf = parse_cached(config_text);
  std::string version = cni::delegate_version(conf);
  if (!cni::is_conflist(conf)) {
    std::string stdin_text =
        has_prev_result(version, cached_result) ? cni::with_prev_result(config_text, cached_result) : config_text;
    invoker_.invoke(type_of(conf), make_call("DEL", target, stdin_text));
    return;
  }
  Json prev = prev_result_for(version, cached_result);
  std::string name = cni::delegate_name(conf);
  std::optional<cni::CniError> first_error;
  const Json& plugins = conf["plugins"];
  for (size_t i = plugins.size(); i-- > 0;) {
    try {
      invoker_.invoke(type_of(plugins[i]),
                      make_call("DEL", target, cni::chain_plugin_stdin(plugins[i], name, version, prev)));
    } catch (const cni::CniError& e) {
      util::log_error("DEL of plugin ", type_of(plugins[i]), " in ", name, " failed: ", e.msg());
      if (!first_error) first_error = e;
    }
  }
  if (first_error) throw *first_error;
}

bool DelegateRunner::check(const std::string& config_text, const std::string& cached_result,
                           const DelegateTarget& target) {
  Json conf = parse_cached(config_text);
  std::string version = cni::delegate_version(conf);
  if (!cni::version_at_least(version, 0, 4)) return false;
  Json prev = prev_result_for(version, cached_result);
  if (prev.is_null()) throw cni::CniError(cni::ErrorCode::CheckFailed, "no cached result to check against");
  if (!cni::is_conflist(conf)) {
    invoker_.invoke(type_of(conf), make_call("CHECK", target, cni::with_prev_result(config_text, cached_result)));
    return true;
  }
  std::string name = cni::delegate_name(conf);
  for (const auto& plugin : conf["plugins"])
    invoker_.invoke(type_of(plugin), make_call("CHECK", target, cni::chain_plugin_stdin(plugin, name, version, prev)));
  return true;
}

bool DelegateRunner::status(const std::string& config_text, const std::string& cni_path) {
  Json conf = parse_cached(config_text);
  std::string version = cni::delegate_version(conf);
  if (!cni::version_at_least(version, 1, 1)) return false;
  DelegateTarget target;
  target.cni_path = cni_path;
  if (!cni::is_conflist(conf)) {
    invoker_.invoke(type_of(conf), make_call("STATUS", target, config_text));
    return true;
  }
  std::string name = cni::delegate_name(conf);
  for (const auto& plugin : conf["plugins"])
    invoker_.invoke(type_of(plugin),
                    make_call("STATUS", target, cni::chain_plugin_stdin(plugin, name, version, Json())));
  return true;
}

bool DelegateRunner::gc(const std::string& config_text, const Json& valid_attachments, const std::string& cni_path) {
  Json conf = parse_cached(config_text);
  std::string version = cni::delegate_version(conf);
  if (!cni::version_at_least(version, 1, 1)) return false;
  DelegateTarget target;
  target.cni_path = cni_path;
  std::string name = cni::delegate_name(conf);
  auto with_valid = [&](Json plugin) {
    plugin["name"] = name;
    plugin["cniVersion"] = version;
    plugin["cni.dev/valid-attachments"] = valid_attachments;
    return plugin.dump();
  };
  if (!cni::is_conflist(conf)) {
    invoker_.invoke(type_of(conf), make_call("GC", target, with_valid(conf)));
    return true;
  }
  for (const auto& plugin : conf["plugins"])
    invoker_.invoke(type_of(plugin), make_call("GC", target, with_valid(plugin)));
  return true;
}

}  // namespace manifold::exec
