// Implementation of NAD config extraction and cni-args merging. The object is read defensively:
// metadata, spec and spec.config are type-checked, the config text is size- and depth-bounded
// before it is parsed, and the conf/conflist shape is checked the way Multus's delegate loader
// checks it (a conf has "type"; otherwise "plugins" with a typed first plugin), a little stricter:
// every plugin must be an object with a plain file-name "type".
#include "k8s/nad_config.h"

#include "cni/error.h"
#include "k8s/pod.h"
#include "k8s/selection.h"
#include "util/utf8.h"
#include "util/json_error.h"

namespace manifold::k8s {
namespace {

constexpr int kMaxConfigDepth = 64;

[[noreturn]] void fail(const std::string& nad, const std::string& what) {
  throw cni::CniError(cni::ErrorCode::InvalidConfig,
                      util::sanitize_utf8("NetworkAttachmentDefinition " + nad + ": " + what));
}

/// "ns/name" for messages ("?" for missing parts).
std::string display_name(const Json& nad) {
  std::string ns = metadata_string(nad, "namespace");
  std::string name = metadata_string(nad, "name");
  return (ns.empty() ? "?" : ns) + "/" + (name.empty() ? "?" : name);
}

/// A delegate "type" must be a plain file name: non-empty, no '/', not "." or "..".
bool is_plain_type(const Json& type) {
  if (!type.is_string()) return false;
  const std::string& t = type.get_ref<const std::string&>();
  return !t.empty() && t.size() <= 255 && t.find('/') == std::string::npos && t.find('\0') == std::string::npos &&
         t != "." && t != "..";
}

void check_shape(const Json& config, const std::string& nad) {
  auto type = config.find("type");
  if (type != config.end()) {
    if (!is_plain_type(*type)) fail(nad, "spec.config \"type\" must be a non-empty plugin file name");
    return;
  }
  auto plugins = config.find("plugins");
  if (plugins == config.end() || plugins->is_null()) {
    fail(nad, "spec.config must have a \"type\" (conf) or \"plugins\" (conflist)");
  }
  if (!plugins->is_array() || plugins->empty()) fail(nad, "spec.config \"plugins\" must be a non-empty list");
  for (std::size_t i = 0; i < plugins->size(); ++i) {
    const Json& plugin = (*plugins)[i];
    if (!plugin.is_object()) fail(nad, "spec.config plugins[" + std::to_string(i) + "] must be an object");
    auto ptype = plugin.find("type");
    if (ptype == plugin.end() || !is_plain_type(*ptype)) {
      fail(nad, "spec.config plugins[" + std::to_string(i) + "] must have a non-empty plugin file name as \"type\"");
    }
  }
}

void merge_into(Json& plugin, const Json& cni_args, const char* where) {
  if (!plugin.is_object()) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        std::string("cannot add cni-args: ") + where + " is not an object");
  }
  auto args = plugin.find("args");
  if (args == plugin.end() || args->is_null()) {
    plugin["args"] = Json{{"cni", cni_args}};
    return;
  }
  if (!args->is_object()) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        std::string("cannot add cni-args: \"args\" of ") + where + " is not an object");
  }
  auto cni = args->find("cni");
  if (cni == args->end() || cni->is_null()) {
    (*args)["cni"] = cni_args;
    return;
  }
  if (!cni->is_object()) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        std::string("cannot add cni-args: \"args.cni\" of ") + where + " is not an object");
  }
  for (const auto& [key, value] : cni_args.items()) (*cni)[key] = value;
}

}  // namespace

std::optional<Json> nad_delegate_config(const Json& nad) {
  const std::string shown = display_name(nad);
  if (!nad.is_object()) fail(shown, "object is a JSON " + std::string(nad.type_name()) + ", not an object");
  auto meta = nad.find("metadata");
  if (meta == nad.end() || !meta->is_object()) fail(shown, "\"metadata\" is missing or not an object");
  auto name = meta->find("name");
  if (name == meta->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    fail(shown, "metadata.name is missing or not a non-empty string");
  }
  auto spec = nad.find("spec");
  if (spec == nad.end() || spec->is_null()) return std::nullopt;
  if (!spec->is_object()) fail(shown, "\"spec\" is a JSON " + std::string(spec->type_name()) + ", not an object");
  auto text = spec->find("config");
  if (text == spec->end() || text->is_null()) return std::nullopt;
  if (!text->is_string()) fail(shown, "spec.config is a JSON " + std::string(text->type_name()) + ", not a string");
  const std::string& raw = text->get_ref<const std::string&>();
  if (raw.empty()) return std::nullopt;
  if (raw.size() > kMaxNadConfigBytes) {
    fail(shown, "spec.config is too large (" + std::to_string(raw.size()) + " bytes, at most " +
                    std::to_string(kMaxNadConfigBytes) + " allowed)");
  }

  Json config;
  try {
    config = Json::parse(raw, [&](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxConfigDepth) {
        fail(shown, "spec.config is nested deeper than " + std::to_string(kMaxConfigDepth) + " levels");
      }
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    fail(shown, "spec.config is " + util::describe_json_error(e));
  }
  if (!config.is_object()) fail(shown, "spec.config is a JSON " + std::string(config.type_name()) + ", not an object");

  auto cfg_name = config.find("name");
  if (cfg_name == config.end() || cfg_name->is_null() ||
      (cfg_name->is_string() && cfg_name->get_ref<const std::string&>().empty())) {
    config["name"] = *name;
  } else if (!cfg_name->is_string()) {
    fail(shown, "spec.config \"name\" must be a string");
  }
  check_shape(config, shown);
  return config;
}

std::string nad_resource_name(const Json& nad) {
  if (!nad.is_object()) return {};
  auto meta = nad.find("metadata");
  if (meta == nad.end() || !meta->is_object()) return {};
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) return {};
  auto value = annotations->find(kResourceNameAnnotation);
  if (value == annotations->end() || !value->is_string()) return {};
  return value->get<std::string>();
}

void merge_cni_args(Json& delegate_config, const Json& cni_args) {
  if (cni_args.is_null()) return;
  if (!cni_args.is_object()) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "cni-args must be an object, not a JSON " + std::string(cni_args.type_name()));
  }
  if (cni_args.empty()) return;
  if (!is_conflist(delegate_config)) {
    merge_into(delegate_config, cni_args, "the delegate config");
    return;
  }
  Json& plugins = delegate_config["plugins"];
  if (!plugins.is_array()) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "cannot add cni-args: \"plugins\" is not a list");
  }
  for (std::size_t i = 0; i < plugins.size(); ++i) {
    std::string where = "plugins[" + std::to_string(i) + "]";
    merge_into(plugins[i], cni_args, where.c_str());
  }
}

bool is_conflist(const Json& delegate_config) {
  return delegate_config.is_object() && delegate_config.contains("plugins") && !delegate_config.contains("type");
}

}  // namespace manifold::k8s
