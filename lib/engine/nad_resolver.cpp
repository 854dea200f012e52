// Implementation of the per-invocation NAD reader: the batch fetch, the kept per-NAD failures and the
// not-found message Multus prints, and the delegate config of a NAD.
#include "engine/nad_resolver.h"

#include "cni/conf_files.h"
#include "cni/error.h"
#include "k8s/nad_config.h"

namespace manifold::engine {

using cni::CniError;
using cni::ErrorCode;

std::optional<k8s::ObjectKey> named_nad(const cni::MetaConfig& config, const std::string& value) {
  if (value.empty() || value.find('/') != std::string::npos) return std::nullopt;
  return k8s::ObjectKey{config.multus_namespace, value};
}

void NadResolver::prefetch(const std::vector<k8s::ObjectKey>& keys) {
  std::vector<k8s::ObjectKey> wanted;
  for (const auto& key : keys) {
    if (!cache_.emplace(key.ns + "/" + key.name, k8s::ApiOutcome{}).second) continue;  // fetched, or named twice
    wanted.push_back(key);
  }
  if (wanted.empty()) return;
  std::vector<k8s::ApiOutcome> got;
  try {
    got = kube_.get_nads(wanted);
  } catch (...) {
    got.assign(wanted.size(), k8s::ApiOutcome{Json(), std::current_exception()});
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) cache_[wanted[i].ns + "/" + wanted[i].name] = std::move(got[i]);
}

const Json* NadResolver::fetch(const std::string& ns, const std::string& name, bool allow_missing) {
  std::string key = ns + "/" + name;
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    k8s::ApiOutcome got;
    try {
      got.object = kube_.get_nad(ns, name);
    } catch (...) {
      got.error = std::current_exception();
    }
    it = cache_.emplace(key, std::move(got)).first;
  }
  if (!it->second.error) return &it->second.object;
  try {
    std::rethrow_exception(it->second.error);
  } catch (const k8s::ApiError& e) {
    if (!e.not_found()) throw;
    if (allow_missing) return nullptr;
    throw CniError(ErrorCode::NetworkNotFound, "cannot find a network-attachment-definition (" + name +
                                                   ") in namespace (" + ns + "): network-attachment-definition " + ns +
                                                   "/" + name + " does not exist");
  }
}

Json NadResolver::delegate_of(const Json& nad, const std::string& ns, const std::string& name) const {
  auto conf = k8s::nad_delegate_config(nad);
  if (conf) return std::move(*conf);
  auto file = cni::find_network_by_name(config_.conf_dir, name);
  if (!file)
    throw CniError(ErrorCode::NetworkNotFound, "network-attachment-definition " + ns + "/" + name +
                                                   " has no spec.config and no network named \"" + name +
                                                   "\" exists in " + config_.conf_dir);
  return file->config;
}

}  // namespace manifold::engine
