// Error mapping for the netlink layer. libnl reports failures as negative NLE_* codes; this file
// turns them into CniError(Netlink) with a message naming the operation, the object and libnl's own
// text ("netlink: add route 10.1.0.0/24 dev #3 table 1000: Object exists"), and classifies the two
// outcomes callers must be able to tolerate: "already exists" (an add with NLM_F_EXCL semantics)
// and "not found" (a delete of something already gone — DEL must be idempotent).
#pragma once

#include <string>
#include <string_view>

#include "cni/error.h"

namespace manifold::netlink {

/// Result of an add that refuses to replace an existing object (NLM_F_EXCL).
enum class AddOutcome {
  Added,   ///< the object was created
  Exists,  ///< an identical object (same kernel identity) was already there; nothing changed
};

/// Result of a delete that tolerates a missing object.
enum class DeleteOutcome {
  Deleted,   ///< the object was removed
  NotFound,  ///< no such object (ENOENT/ESRCH/ENODEV); nothing changed
};

/// "added" / "exists".
std::string_view to_string(AddOutcome outcome) noexcept;
/// "deleted" / "not found".
std::string_view to_string(DeleteOutcome outcome) noexcept;

/// True when a libnl error code (negative or positive) means the object exists (EEXIST).
bool is_exists_error(int nl_error) noexcept;

/// True when a libnl error code means the object, or the device it hangs off, does not exist
/// (ENOENT and ESRCH map to NLE_OBJ_NOTFOUND, ENODEV to NLE_NODEV).
bool is_not_found_error(int nl_error) noexcept;

/// libnl's description of an error code (nl_geterror), e.g. "Object exists".
std::string nl_error_text(int nl_error);

/// Builds CniError(Netlink) for a failed operation: msg "netlink: <operation> <object>: <text>",
/// details = `context` (typically "netns /run/netns/x"). <text> is libnl's description; when libnl
/// could only say "Unspecific failure" and the kernel's errno is known, strerror(errno) follows in
/// parentheses ("Unspecific failure (No route to host)").
cni::CniError netlink_error(std::string_view operation, std::string_view object, int nl_error,
                            std::string_view context = {}, int kernel_errno = 0);

}  // namespace manifold::netlink
