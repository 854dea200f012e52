// Implementation of PolicyError and the JSON paths it names.
#include "policy/policy_error.h"

namespace manifold::policy {

PolicyError::PolicyError(std::string where, std::string message)
    : where_(std::move(where)), message_(std::move(message)), text_(where_ + ": " + message_) {}

std::string path_key(const std::string& base, const std::string& key) { return base.empty() ? key : base + "." + key; }

std::string path_index(const std::string& base, std::size_t index) { return base + "[" + std::to_string(index) + "]"; }

}  // namespace manifold::policy
