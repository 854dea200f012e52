// Reading back what ADD cached about an attachment — its CNI_ARGS, its delegate config and its
// result — and rendering the ADD result from a container record. Cache files are untrusted input
// (a power loss can truncate them, anyone with root can edit them), so every accessor turns a
// wrongly typed or unparsable value into a CniError(Decoding) naming the network, never into a
// library exception; DEL catches those per attachment and carries on best-effort.
#pragma once

#include <string>
#include <vector>

#include "cni/result.h"
#include "store/record.h"

namespace manifold::engine {

/// The CNI_ARGS cached for `a` at ADD, or `fallback` when none was cached. Throws CniError(Decoding) naming the network when the cached value is not a string.
std::string cached_cni_args(const store::AttachmentRecord& a, const std::string& fallback);

/// True when `a`'s cached delegate config is a JSON object of a valid delegate shape (a conf with
/// a string "type" or a conflist whose plugins all have one), i.e. its DEL can be replayed.
bool has_usable_config(const store::AttachmentRecord& a);

/// `a`'s cached result decoded in its delegate config's cniVersion. Throws CniError(Decoding)
/// naming the network when the cached config is not a JSON object, and the codec's CniError
/// (Decoding, or IncompatibleVersion for an unsupported version) when the result is unusable.
cni::Result decode_attachment_result(const store::AttachmentRecord& a);

/// The ADD result of `record` in `version`, with a trailing newline: the cluster network's result,
/// or with `all` every attachment's result merged. Throws CniError(Internal) when the record has no
/// cluster network attachment (or, with `all`, no attachment at all), so an inconsistent record is
/// a clear error instead of undefined behaviour.
std::string render_result(const store::ContainerRecord& record, const std::string& version, bool all);

/// The same from results already decoded: `results[i]` is `record.attachments[i]`'s decoded result
/// (CniError(Internal) when the counts differ).
std::string render_result(const store::ContainerRecord& record, const std::vector<cni::Result>& results,
                          const std::string& version, bool all);

}  // namespace manifold::engine
