// Parsing untrusted JSON text without exceptions and with a nesting bound. Cache files and plugin
// output are hostile input: nlohmann's parser reports invalid text by throwing, and copying or
// printing a very deeply nested document recurses far enough to overflow the stack, so every
// parser of such text goes through this one function and checks for a discarded value.
#pragma once

#include <string>

#include "util/json.h"

namespace manifold::util {

/// Deepest JSON accepted from the cache or from a plugin.
inline constexpr int kMaxDocumentDepth = 256;

/// `text` parsed; a discarded value (`is_discarded()`) when it is not valid JSON, holds a NUL
/// byte, or nests values deeper than `max_depth` (the top value is at depth 0, so `max_depth` + 1
/// levels of arrays or objects are accepted).
Json parse_json_bounded(const std::string& text, int max_depth = kMaxDocumentDepth);

/// The type of the value parse_json_bounded(text, max_depth) returns — `value_t::discarded` when it
/// would discard the text — found without building the document: for callers that only check it.
Json::value_t json_type_bounded(const std::string& text, int max_depth = kMaxDocumentDepth);

}  // namespace manifold::util
