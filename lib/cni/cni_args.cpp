// Implementation of CNI_ARGS parsing, lookup and rendering.
#include "cni/cni_args.h"

#include <algorithm>

#include "cni/error.h"

namespace manifold::cni {

namespace {

constexpr size_t kMaxArgsBytes = 64 * 1024;

bool has_control_chars(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

}  // namespace

CniArgs CniArgs::parse(std::string_view text) {
  if (text.size() > kMaxArgsBytes)
    throw CniError(ErrorCode::InvalidEnv,
                   "CNI_ARGS is too long (" + std::to_string(text.size()) + " bytes, limit 65536)");
  CniArgs out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(';', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw CniError(ErrorCode::InvalidEnv,
                       "invalid CNI_ARGS pair \"" + std::string(item.substr(0, 64)) + "\": expected KEY=VALUE");
      if (has_control_chars(item))
        throw CniError(ErrorCode::InvalidEnv,
                       "invalid CNI_ARGS: control characters in \"" + std::string(item.substr(0, eq)) + "\"");
      out.pairs_.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    }
    pos = end + 1;
  }
  return out;
}

std::optional<std::string> CniArgs::get(std::string_view key) const {
  std::optional<std::string> found;
  for (const auto& [k, v] : pairs_)
    if (k == key) found = v;
  return found;
}

CniArgs CniArgs::without(std::initializer_list<std::string_view> keys) const {
  CniArgs out;
  for (const auto& p : pairs_)
    if (std::find(keys.begin(), keys.end(), p.first) == keys.end()) out.pairs_.push_back(p);
  return out;
}

void CniArgs::set(const std::string& key, const std::string& value) {
  bool placed = false;
  std::vector<std::pair<std::string, std::string>> next;
  for (auto& p : pairs_) {
    if (p.first != key) {
      next.push_back(std::move(p));
    } else if (!placed) {
      next.emplace_back(key, value);
      placed = true;
    }
  }
  if (!placed) next.emplace_back(key, value);
  pairs_ = std::move(next);
}

std::string CniArgs::str() const {
  std::string out;
  for (const auto& [k, v] : pairs_) {
    if (!out.empty()) out += ';';
    out += k + "=" + v;
  }
  return out;
}

PodRef pod_ref_from(const CniArgs& args) {
  PodRef ref;
  ref.namespace_ = args.get("K8S_POD_NAMESPACE").value_or("");
  ref.name = args.get("K8S_POD_NAME").value_or("");
  ref.uid = args.get("K8S_POD_UID").value_or("");
  ref.infra_container = args.get("K8S_POD_INFRA_CONTAINER_ID").value_or("");
  return ref;
}

std::string delegate_cni_args(const CniArgs& runtime_args,
                              const std::vector<std::pair<std::string, std::string>>& extra) {
  CniArgs out = runtime_args;
  for (const auto& [k, v] : extra) out.set(k, v);
  if (!out.pairs().empty() && !out.get("IgnoreUnknown")) {
    CniArgs with;
    with.set("IgnoreUnknown", "true");
    for (const auto& [k, v] : out.pairs()) with.set(k, v);
    out = std::move(with);
  }
  return out.str();
}

}  // namespace manifold::cni
