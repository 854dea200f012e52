// Implementation of the cached scoping state's decoding error.
#include "scoping/cached_state.h"

#include "cni/error.h"

namespace manifold::scoping {

void throw_bad_cached_state(std::string_view kind, const std::string& field, const std::string& why) {
  throw cni::CniError(cni::ErrorCode::Decoding, "invalid cached " + std::string(kind) + " state: " + field + " " + why);
}

}  // namespace manifold::scoping
