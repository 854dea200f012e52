// Implementation of offline config validation: a table of the meta-plugin keys with their expected
// types and ranges (the same ones parse_meta_config enforces), walked without stopping at the first
// problem, and a network-config walker for delegates, conflist plugins and NAD configs.
#include "cni/config_validate.h"

#include <algorithm>
#include <cctype>

#include "cni/version.h"
#include "util/env.h"
#include "util/log.h"

namespace manifold::cni {

namespace {

enum class Kind { String, NonEmptyString, Bool, Int, StringList, Object, Special };

struct KeySpec {
  const char* key;
  Kind kind;
  long long lo = 0;
  long long hi = 0;
};

// Every key of the meta-plugin config. Special keys have their own checks below.
const std::vector<KeySpec>& meta_keys() {
  static const std::vector<KeySpec> keys = {
      {"cniVersion", Kind::Special},
      {"name", Kind::String},
      {"type", Kind::NonEmptyString},
      {"delegates", Kind::Special},
      {"clusterNetwork", Kind::String},
      {"defaultNetworks", Kind::StringList},
      {"kubeconfig", Kind::String},
      {"confDir", Kind::String},
      {"cniDir", Kind::NonEmptyString},
      {"binDir", Kind::String},
      {"readinessindicatorfile", Kind::String},
      {"readinessTimeout", Kind::Int, 0, 3600},
      {"logFile", Kind::String},
      {"logLevel", Kind::Special},
      {"logToStderr", Kind::Bool},
      {"logOptions", Kind::Special},
      {"namespaceIsolation", Kind::Bool},
      {"globalNamespaces", Kind::String},
      {"systemNamespaces", Kind::StringList},
      {"multusNamespace", Kind::String},
      {"retryDeleteOnError", Kind::Bool},
      {"auxiliaryCNIChainName", Kind::String},
      {"capabilities", Kind::Special},
      {"runtimeConfig", Kind::Object},
      {"returnAllResults", Kind::Bool},
      {"delegateTimeout", Kind::Int, 1, 3600},
      {"delegateEnv", Kind::Special},
      {"sourceRouting", Kind::Special},
      {"mesh", Kind::Special},
      {"prevResult", Kind::Object},
      {"args", Kind::Object},
  };
  return keys;
}

bool is_identifier(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void add(Problems& out, std::string path, std::string message, bool warning = false) {
  out.push_back(Problem{std::move(path), std::move(message), warning});
}

bool is_integer(const Json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

void check_kind(const Json& v, const KeySpec& spec, const std::string& path, Problems& out) {
  switch (spec.kind) {
    case Kind::String:
      if (!v.is_string()) add(out, path, "must be a string");
      break;
    case Kind::NonEmptyString:
      if (!v.is_string() || v.get_ref<const std::string&>().empty()) add(out, path, "must be a non-empty string");
      break;
    case Kind::Bool:
      if (!v.is_boolean()) add(out, path, "must be a boolean (true or false)");
      break;
    case Kind::Int:
      if (!is_integer(v)) {
        add(out, path, "must be an integer");
      } else if (v.is_number_unsigned() ? v.get<unsigned long long>() > static_cast<unsigned long long>(spec.hi)
                                        : (v.get<long long>() < spec.lo || v.get<long long>() > spec.hi)) {
        add(out, path, "must be between " + std::to_string(spec.lo) + " and " + std::to_string(spec.hi));
      }
      break;
    case Kind::StringList:
      if (!v.is_array()) {
        add(out, path, "must be a list of strings");
      } else {
        for (size_t i = 0; i < v.size(); ++i)
          if (!v[i].is_string()) add(out, json_path_index(path, i), "must be a string");
      }
      break;
    case Kind::Object:
      if (!v.is_object()) add(out, path, "must be an object");
      break;
    case Kind::Special:
      break;
  }
}

void check_cni_version(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_string()) {
    add(out, path, "must be a string");
  } else if (!is_supported_version(v.get_ref<const std::string&>())) {
    std::string list;
    for (const auto& s : supported_versions()) list += (list.empty() ? "" : ", ") + s;
    add(out, path, "unsupported CNI version \"" + v.get<std::string>() + "\" (supported: " + list + ")");
  }
}

void check_plugin_type(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    add(out, path, "must be a non-empty string");
  } else if (!is_plain_plugin_type(v.get_ref<const std::string&>())) {
    add(out, path, "must be a plugin file name, not a path (no '/', '.' or '..')");
  }
}

void check_capabilities(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_object()) {
    add(out, path, "must be an object of booleans");
    return;
  }
  for (auto it = v.begin(); it != v.end(); ++it)
    if (!it.value().is_boolean()) add(out, json_path_key(path, it.key()), "must be a boolean");
}

void check_scoping(std::string_view key, const Json& v, const std::string& path, Problems& out,
                   const ScopingChecker& scoping) {
  if (v.is_null()) return;
  if (!v.is_object()) {
    add(out, path, "must be an object");
    return;
  }
  if (scoping) scoping(key, v, path, out);
}

// The fields every plugin object (a conf, or one plugin of a conflist) may carry.
void check_plugin_fields(const Json& plugin, const std::string& path, Problems& out, const ScopingChecker& scoping) {
  if (auto it = plugin.find("type"); it == plugin.end()) {
    add(out, json_path_key(path, "type"), "is required");
  } else {
    check_plugin_type(*it, json_path_key(path, "type"), out);
  }
  if (auto it = plugin.find("ipam"); it != plugin.end() && !it->is_null()) {
    if (!it->is_object()) {
      add(out, json_path_key(path, "ipam"), "must be an object");
    } else if (auto t = it->find("type"); t != it->end()) {
      check_plugin_type(*t, json_path_key(json_path_key(path, "ipam"), "type"), out);
    }
  }
  if (auto it = plugin.find("capabilities"); it != plugin.end() && !it->is_null())
    check_capabilities(*it, json_path_key(path, "capabilities"), out);
  if (auto it = plugin.find("args"); it != plugin.end() && !it->is_null() && !it->is_object())
    add(out, json_path_key(path, "args"), "must be an object");
  for (const char* key : {"mesh", "sourceRouting"})
    if (auto it = plugin.find(key); it != plugin.end()) check_scoping(key, *it, json_path_key(path, key), out, scoping);
}

void check_optional_string(const Json& obj, const char* key, const std::string& path, Problems& out) {
  if (auto it = obj.find(key); it != obj.end() && !it->is_null() && !it->is_string())
    add(out, json_path_key(path, key), "must be a string");
}

bool is_meta_type(const Json& obj) {
  auto t = obj.find("type");
  return t != obj.end() && t->is_string() && (*t == "manifold" || *t == "multus");
}

void check_log_options(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_object()) {
    add(out, path, "must be an object");
    return;
  }
  static const KeySpec specs[] = {{"maxSize", Kind::Int, 0, 1 << 20},
                                  {"maxBackups", Kind::Int, 0, 1000},
                                  {"maxAge", Kind::Int, 0, 100000},
                                  {"compress", Kind::Bool}};
  for (auto it = v.begin(); it != v.end(); ++it) {
    auto spec = std::find_if(std::begin(specs), std::end(specs), [&](const KeySpec& s) { return it.key() == s.key; });
    std::string p = json_path_key(path, it.key());
    if (spec == std::end(specs)) {
      add(out, p, "unknown logOptions key (known: maxSize, maxBackups, maxAge, compress)", true);
    } else if (!it.value().is_null()) {
      check_kind(it.value(), *spec, p, out);
    }
  }
}

}  // namespace

std::string json_path_key(const std::string& base, std::string_view key) {
  if (is_identifier(key)) return base + "." + std::string(key);
  return base + "[" + Json(std::string(key)).dump(-1, ' ', false, Json::error_handler_t::replace) + "]";
}

std::string json_path_index(const std::string& base, std::size_t index) {
  return base + "[" + std::to_string(index) + "]";
}

std::string format_problem(const Problem& problem) {
  return (problem.warning ? "warning: " : "") + problem.path + ": " + problem.message;
}

bool has_errors(const Problems& problems) {
  return std::any_of(problems.begin(), problems.end(), [](const Problem& p) { return !p.warning; });
}

bool is_plain_plugin_type(std::string_view type) {
  return !type.empty() && type.size() <= 255 && type.find('/') == std::string_view::npos &&
         type.find('\0') == std::string_view::npos && type != "." && type != "..";
}

void validate_network_config(const Json& config, const std::string& path, Problems& out,
                             const ScopingChecker& scoping) {
  if (!config.is_object()) {
    add(out, path, "must be an object (a network config)");
    return;
  }
  if (auto it = config.find("cniVersion"); it != config.end()) check_cni_version(*it, json_path_key(path, "cniVersion"), out);
  check_optional_string(config, "name", path, out);
  bool conflist = config.contains("plugins") && !config.contains("type");
  if (!conflist) {
    if (!config.contains("type")) {
      add(out, path, "has neither \"type\" (a conf) nor \"plugins\" (a conflist)");
      return;
    }
    check_plugin_fields(config, path, out, scoping);
    return;
  }
  for (const char* key : {"mesh", "sourceRouting"})
    if (auto it = config.find(key); it != config.end()) check_scoping(key, *it, json_path_key(path, key), out, scoping);
  std::string ppath = json_path_key(path, "plugins");
  const Json& plugins = config["plugins"];
  if (!plugins.is_array() || plugins.empty()) {
    add(out, ppath, "must be a non-empty list of plugin objects");
    return;
  }
  for (size_t i = 0; i < plugins.size(); ++i) {
    std::string p = json_path_index(ppath, i);
    if (!plugins[i].is_object()) {
      add(out, p, "must be an object");
      continue;
    }
    check_plugin_fields(plugins[i], p, out, scoping);
  }
}

void validate_meta_config(const Json& config, const std::string& path, Problems& out, const ScopingChecker& scoping,
                          bool in_list) {
  if (!config.is_object()) {
    add(out, path, "must be an object (the meta-plugin config)");
    return;
  }
  if (!in_list)  // in a conflist the runtime injects the list's name
    if (auto it = config.find("name"); it == config.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
      add(out, json_path_key(path, "name"), "must be a non-empty string (the network name; CNI requires it)");
  const auto& keys = meta_keys();
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string& key = it.key();
    std::string p = json_path_key(path, key);
    auto spec = std::find_if(keys.begin(), keys.end(), [&](const KeySpec& s) { return key == s.key; });
    if (spec == keys.end()) {
      auto near = std::find_if(keys.begin(), keys.end(), [&](const KeySpec& s) { return lower(key) == lower(s.key); });
      if (near != keys.end())
        add(out, p, std::string("unknown key, ignored; did you mean \"") + near->key + "\"? (keys are case-sensitive)",
            true);
      continue;
    }
    const Json& v = it.value();
    if (v.is_null()) continue;  // null means "not set", as in parse_meta_config
    if (spec->kind != Kind::Special) {
      check_kind(v, *spec, p, out);
      continue;
    }
    if (key == "cniVersion") {
      check_cni_version(v, p, out);
    } else if (key == "logLevel") {
      util::LogLevel level;
      if (!v.is_string()) add(out, p, "must be a string");
      else if (!util::parse_log_level(v.get_ref<const std::string&>(), level))
        add(out, p, "must be one of panic, error, verbose, debug");
    } else if (key == "delegateEnv") {
      if (!v.is_array()) {
        add(out, p, "must be a list of variable names");
        continue;
      }
      for (size_t i = 0; i < v.size(); ++i)
        if (!v[i].is_string() || !util::is_env_name_pattern(v[i].get<std::string>()))
          add(out, json_path_index(p, i), "must be a variable name (letters, digits, _) or a prefix ending in *");
    } else if (key == "logOptions") {
      check_log_options(v, p, out);
    } else if (key == "capabilities") {
      check_capabilities(v, p, out);
    } else if (key == "sourceRouting" || key == "mesh") {
      check_scoping(key, v, p, out, scoping);
    } else if (key == "delegates") {
      if (!v.is_array()) {
        add(out, p, "must be a list of network configs");
        continue;
      }
      for (size_t i = 0; i < v.size(); ++i) {
        std::string dp = json_path_index(p, i);
        validate_network_config(v[i], dp, out, scoping);
        if (v[i].is_object() && !v[i].contains("name"))
          add(out, dp, "has no \"name\"; the delegate's result cache and network-status entry will be unnamed", true);
      }
    }
  }
  auto present = [&](const char* key) {
    auto it = config.find(key);
    return it != config.end() && !it->is_null();
  };
  bool has_delegates = present("delegates") && config["delegates"].is_array() && !config["delegates"].empty();
  bool has_cluster = present("clusterNetwork") && config["clusterNetwork"].is_string() &&
                     !config["clusterNetwork"].get_ref<const std::string&>().empty();
  if (!has_delegates && !has_cluster && !(present("delegates") && !config["delegates"].is_array()))
    add(out, path, "at least one delegate or clusterNetwork must be specified");
  if (has_delegates && has_cluster)
    add(out, json_path_key(path, "delegates"), "is ignored because clusterNetwork is set", true);
  if (!in_list && !present("cniVersion")) add(out, json_path_key(path, "cniVersion"), "is not set; CNI treats it as 0.1.0", true);
  if (!present("type")) add(out, json_path_key(path, "type"), "is required");
}

Problems validate_config_document(const Json& document, const ScopingChecker& scoping) {
  Problems out;
  if (!document.is_object()) {
    add(out, "$", "must be a JSON object");
    return out;
  }
  bool conflist = document.contains("plugins") && !document.contains("type");
  if (!conflist) {
    bool meta = is_meta_type(document) || document.contains("delegates") || document.contains("clusterNetwork");
    if (meta) validate_meta_config(document, "$", out, scoping, false);
    else validate_network_config(document, "$", out, scoping);
    return out;
  }
  // A conflist: the list's fields, then each plugin; the manifold plugin is a meta-plugin config.
  if (auto it = document.find("cniVersion"); it != document.end()) check_cni_version(*it, "$.cniVersion", out);
  else add(out, "$.cniVersion", "is not set; CNI treats it as 0.1.0", true);
  if (auto it = document.find("name"); it == document.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    add(out, "$.name", "must be a non-empty string (the network name)");
  const Json& plugins = document["plugins"];
  if (!plugins.is_array() || plugins.empty()) {
    add(out, "$.plugins", "must be a non-empty list of plugin objects");
    return out;
  }
  for (size_t i = 0; i < plugins.size(); ++i) {
    std::string p = json_path_index("$.plugins", i);
    if (plugins[i].is_object() && is_meta_type(plugins[i])) {
      validate_meta_config(plugins[i], p, out, scoping, true);
    } else if (!plugins[i].is_object()) {
      add(out, p, "must be an object");
    } else {
      check_plugin_fields(plugins[i], p, out, scoping);
    }
  }
  return out;
}

Problems validate_config_text(std::string_view text, const ScopingChecker& scoping) {
  Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    // Re-parse with exceptions to learn where it broke.
    try {
      Json again = Json::parse(text);
      (void)again;
    } catch (const Json::parse_error& e) {
      return {Problem{"$", "not valid JSON (syntax error at byte " + std::to_string(e.byte) + ")", false}};
    }
    return {Problem{"$", "not valid JSON", false}};
  }
  return validate_config_document(doc, scoping);
}

}  // namespace manifold::cni
