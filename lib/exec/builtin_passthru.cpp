// Implementation of the built-in passthru plugin.
#include "exec/builtin_passthru.h"

#include "cni/error.h"
#include "util/json.h"

namespace manifold::exec {

bool is_builtin_plugin(std::string_view type) { return type == kPassthruType; }

std::string run_builtin_passthru(const std::string& command, const std::string& config) {
  if (command != "ADD") return std::string();
  Json conf = Json::parse(config, nullptr, false);
  if (!conf.is_object())
    throw cni::CniError(cni::ErrorCode::Decoding, "passthru: the plugin config is not a JSON object");
  const std::string version = conf.value("cniVersion", std::string("0.1.0"));
  auto prev = conf.find("prevResult");
  if (prev == conf.end() || prev->is_null()) return Json{{"cniVersion", version}}.dump();
  if (!prev->is_object()) throw cni::CniError(cni::ErrorCode::Decoding, "passthru: prevResult is not an object");
  Json result = *prev;
  result["cniVersion"] = version;
  return result.dump();
}

}  // namespace manifold::exec
