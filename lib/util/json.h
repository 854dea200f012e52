// JSON alias used across manifold. We use nlohmann's ordered_json everywhere so that objects keep the
// key order they were read or built in: delegate configs reach plugins in the operator's order, and
// network-status is written with exactly the field order Multus writes.
#pragma once

#include <nlohmann/json.hpp>

namespace manifold {

/// The one JSON type of the code base: insertion-ordered objects.
using Json = nlohmann::ordered_json;

}  // namespace manifold
