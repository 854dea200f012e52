// The cache file's text, shared by FileCache and MemoryCache: the storability checks, compact JSON
// with a clear error for what cannot be serialised, the size bound, the text of a whole record —
// also assembled from per-attachment texts a cache kept from an earlier save — and the bounded
// parse of a file's text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/record.h"
#include "util/json.h"

namespace manifold::store {

/// True if `id` matches [A-Za-z0-9][A-Za-z0-9_.-]* and has at most kMaxContainerIdLength characters.
bool is_valid_container_id(std::string_view id);

/// The attachment's "extra" object as the file holds it: its other keys plus the typed state
/// ("cniArgs", "deviceInfoFile", "scoping", "statusFields"; "delegateStarted" when false) when set.
Json attachment_extra_json(const AttachmentRecord& a);

/// Throws CniError(Internal) unless every `extra` of the record is an object.
void check_storable(const ContainerRecord& record);

/// Compact JSON text of `value` (a part of `record`); CniError(Internal) when it cannot be
/// serialised (invalid UTF-8).
std::string compact_json(const Json& value, const ContainerRecord& record);

/// Appends the final newline and enforces the size limit (CniError(Io) above kMaxCacheFileBytes).
std::string finish_text(std::string text, const ContainerRecord& record);

/// The record's whole file text; throws when it cannot be stored.
std::string record_text(const ContainerRecord& record);

/// The file text of `record` given the text of each of its attachments: byte for byte what
/// record_text() writes (record_to_json's key order, compact).
std::string assemble_record_text(const ContainerRecord& record, const std::vector<const std::string*>& attachments);

/// Parses a cache file's text with the nesting bound; CniError(Decoding) naming `source` on error.
Json parse_record_json(const std::string& text, const std::string& source);

}  // namespace manifold::store
