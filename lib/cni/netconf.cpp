// Implementation of meta-plugin config parsing (a walk of the meta-config schema that stops at the
// first bad key) and delegate shape validation.
#include "cni/netconf.h"

#include "cni/error.h"
#include "cni/meta_schema.h"

namespace manifold::cni {

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
  static const Json empty = Json::object();
  MetaConfig m;
  m.raw = c;
  ProblemReport first_error;  // throws CniError(InvalidConfig) at the first bad key
  MetaWalk(c.is_object() ? c : empty, "$", first_error, m, false, nullptr).run();
  return m;
}

}  // namespace manifold::cni
