// Plugin lookup: type validation, the ordered directory search and CNI_PATH splitting.
#include "exec/plugin_finder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cni/error.h"
#include "exec/builtin_passthru.h"
#include "util/quote.h"

namespace manifold::exec {

namespace {

/// A plugin type in double quotes for an error message, printable and bounded (util::printable).
std::string quote(std::string_view type) { return "\"" + util::printable(type) + "\""; }

bool is_executable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return ::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) == 0;
}

}  // namespace

void validate_plugin_type(std::string_view type) {
  bool ok = !type.empty() && type.size() <= kMaxPluginTypeLength && type.find('/') == std::string_view::npos &&
            type.find('\0') == std::string_view::npos && type.find("..") == std::string_view::npos && type != ".";
  if (!ok) {
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "invalid plugin type " + quote(type) + ": must be a file name");
  }
}

std::string find_plugin(std::string_view type, const std::vector<std::string>& dirs) {
  validate_plugin_type(type);
  std::string searched;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    std::string candidate = dir;
    if (candidate.back() != '/') candidate += '/';
    candidate += type;
    if (is_executable_file(candidate)) return candidate;
    if (!searched.empty()) searched += ' ';
    searched += dir;
  }
  throw cni::CniError(cni::ErrorCode::DelegateFailed,
                      "failed to find plugin " + quote(type) + " in path [" + searched + "]");
}

std::string find_plugin_or_builtin(std::string_view type, const std::vector<std::string>& dirs) {
  try {
    return find_plugin(type, dirs);
  } catch (const cni::CniError& e) {
    if (e.code() == static_cast<unsigned>(cni::ErrorCode::DelegateFailed) && is_builtin_plugin(type))
      return std::string();
    throw;
  }
}

std::vector<std::string> split_cni_path(std::string_view value) {
  std::vector<std::string> out;
  while (!value.empty()) {
    size_t colon = value.find(':');
    std::string_view part = value.substr(0, colon);
    if (!part.empty()) out.emplace_back(part);
    if (colon == std::string_view::npos) break;
    value.remove_prefix(colon + 1);
  }
  return out;
}

}  // namespace manifold::exec
