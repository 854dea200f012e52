// Implementation of offline config validation: the meta-config schema walked with a collecting
// report (plus the near-miss and advice warnings only an operator needs), and a network-config
// walker for delegates, conflist plugins and NAD configs.
#include "cni/config_validate.h"

#include <algorithm>
#include <cctype>

#include "cni/meta_schema.h"
#include "cni/version.h"

namespace manifold::cni {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void add(Problems& out, std::string path, std::string message, bool warning = false) {
  out.push_back(Problem{std::move(path), std::move(message), warning});
}

void check_plugin_type(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    add(out, path, "must be a non-empty string");
  } else if (!is_plain_plugin_type(v.get_ref<const std::string&>())) {
    add(out, path, "must be a plugin file name, not a path (no '/', '.' or '..')");
  }
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
    validate_capabilities(*it, json_path_key(path, "capabilities"), out);
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

}  // namespace

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

void validate_cni_version(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_string()) {
    add(out, path, "must be a string");
  } else if (!is_supported_version(v.get_ref<const std::string&>())) {
    std::string list;
    for (const auto& s : supported_versions()) list += (list.empty() ? "" : ", ") + s;
    add(out, path, "unsupported CNI version \"" + v.get<std::string>() + "\" (supported: " + list + ")");
  }
}

void validate_capabilities(const Json& v, const std::string& path, Problems& out) {
  if (!v.is_object()) {
    add(out, path, "must be an object of booleans");
    return;
  }
  for (auto it = v.begin(); it != v.end(); ++it)
    if (!it.value().is_boolean()) add(out, json_path_key(path, it.key()), "must be a boolean");
}

void validate_network_config(const Json& config, const std::string& path, Problems& out,
                             const ScopingChecker& scoping) {
  if (!config.is_object()) {
    add(out, path, "must be an object (a network config)");
    return;
  }
  if (auto it = config.find("cniVersion"); it != config.end())
    validate_cni_version(*it, json_path_key(path, "cniVersion"), out);
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
  ProblemReport every_problem(out);
  MetaConfig unused;
  MetaWalk(config, path, every_problem, unused, in_list, &scoping).run();
  const auto fields = meta_fields();
  for (auto it = config.begin(); it != config.end(); ++it) {
    auto known = [&](const MetaField& f) { return f.key == it.key(); };
    if (std::any_of(fields.begin(), fields.end(), known)) continue;
    auto near =
        std::find_if(fields.begin(), fields.end(), [&](const MetaField& f) { return lower(f.key) == lower(it.key()); });
    if (near != fields.end())
      add(out, json_path_key(path, it.key()),
          "unknown key, ignored; did you mean \"" + std::string(near->key) + "\"? (keys are case-sensitive)", true);
  }
  auto present = [&](const char* key) {
    auto it = config.find(key);
    return it != config.end() && !it->is_null();
  };
  bool has_delegates = present("delegates") && config["delegates"].is_array() && !config["delegates"].empty();
  if (has_delegates && !unused.cluster_network.empty())
    add(out, json_path_key(path, "delegates"), "is ignored because clusterNetwork is set", true);
  if (!in_list && !present("cniVersion"))
    add(out, json_path_key(path, "cniVersion"), "is not set; CNI treats it as 0.1.0", true);
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
    if (meta)
      validate_meta_config(document, "$", out, scoping, false);
    else
      validate_network_config(document, "$", out, scoping);
    return out;
  }
  // A conflist: the list's fields, then each plugin; the manifold plugin is a meta-plugin config.
  if (auto it = document.find("cniVersion"); it != document.end())
    validate_cni_version(*it, "$.cniVersion", out);
  else
    add(out, "$.cniVersion", "is not set; CNI treats it as 0.1.0", true);
  if (auto it = document.find("name");
      it == document.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
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
