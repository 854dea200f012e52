// Implementation of the libnl error classification and the CniError(Netlink) builder.
#include "netlink/error.h"

#include <netlink/errno.h>

#include <cstdlib>
#include <cstring>

namespace manifold::netlink {

std::string_view to_string(AddOutcome outcome) noexcept { return outcome == AddOutcome::Added ? "added" : "exists"; }

std::string_view to_string(DeleteOutcome outcome) noexcept {
  return outcome == DeleteOutcome::Deleted ? "deleted" : "not found";
}

bool is_exists_error(int nl_error) noexcept { return std::abs(nl_error) == NLE_EXIST; }

bool is_not_found_error(int nl_error) noexcept {
  const int e = std::abs(nl_error);
  return e == NLE_OBJ_NOTFOUND || e == NLE_NODEV;
}

std::string nl_error_text(int nl_error) { return nl_geterror(nl_error); }

cni::CniError netlink_error(std::string_view operation, std::string_view object, int nl_error, std::string_view context,
                            int kernel_errno) {
  std::string msg = "netlink: ";
  msg += operation;
  if (!object.empty()) {
    msg += ' ';
    msg += object;
  }
  msg += ": ";
  msg += nl_error_text(nl_error);
  if (kernel_errno != 0 && std::abs(nl_error) == NLE_FAILURE) {
    msg += " (";
    msg += std::strerror(kernel_errno);
    msg += ')';
  }
  return cni::CniError(cni::ErrorCode::Netlink, std::move(msg), std::string(context));
}

}  // namespace manifold::netlink
