// JSON alias used across manifold. We use nlohmann's ordered_json everywhere so that objects keep the
// key order they were read or built in: delegate configs reach plugins in the operator's order, and
// network-status is written with exactly the field order Multus writes. Also the one way to walk a
// path of object keys in a document that may have any shape (API objects, manifests).
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace manifold {

/// The one JSON type of the code base: insertion-ordered objects.
using Json = nlohmann::ordered_json;

/// The value at `keys` (object keys from `root` down), or null when a level is missing or not an
/// object.
inline const Json* json_at(const Json& root, std::initializer_list<const char*> keys) {
  const Json* cur = &root;
  for (const char* k : keys) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

/// The string at `keys`, or "" when it is missing or not a string.
inline std::string json_string_at(const Json& root, std::initializer_list<const char*> keys) {
  const Json* v = json_at(root, keys);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace manifold
