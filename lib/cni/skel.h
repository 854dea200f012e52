// The CNI dispatcher ("skel"). It reads the CNI_* environment and the stdin config, validates both
// the way the spec and libcni do, picks the handler for CNI_COMMAND and turns the outcome into the
// text manifold prints on stdout: a result, nothing, or — the one place in manifold where errors are
// rendered — the spec's error JSON. Handlers are an interface, so tests drive the dispatcher with a
// map for the environment and strings for stdin/stdout, with no process involved.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "cni/cni_args.h"
#include "cni/version.h"
#include "util/json.h"

namespace manifold::cni {

/// The CNI verbs.
enum class Command { Add, Del, Check, Gc, Status, Version };

/// Everything one CNI call carries, validated.
struct Invocation {
  Command command = Command::Version;  ///< CNI_COMMAND
  std::string container_id;            ///< CNI_CONTAINERID
  std::string netns;                   ///< CNI_NETNS (may be empty on DEL)
  std::string ifname;                  ///< CNI_IFNAME
  std::string path;                    ///< CNI_PATH
  std::string args_text;               ///< CNI_ARGS as given
  CniArgs args;                        ///< CNI_ARGS parsed
  std::string stdin_data;              ///< the raw config bytes
  Json config;                         ///< the config, parsed (an object)
  std::string version;                 ///< the config's cniVersion ("" → "0.1.0")
};

/// The verb implementations. Each returns the text to print on stdout ("" for none) or throws.
class Handlers {
 public:
  virtual ~Handlers() = default;
  /// ADD: returns the result JSON text.
  virtual std::string add(const Invocation& inv) = 0;
  /// DEL.
  virtual std::string del(const Invocation& inv) = 0;
  /// CHECK.
  virtual std::string check(const Invocation& inv) = 0;
  /// GC.
  virtual std::string gc(const Invocation& inv) = 0;
  /// STATUS.
  virtual std::string status(const Invocation& inv) = 0;
};

/// Outcome of one dispatch: what goes to stdout and the process exit code.
struct DispatchOutput {
  std::string stdout_text;  ///< result JSON, error JSON, or empty
  int exit_code = 0;        ///< 0 on success, 1 on error
};

/// Largest accepted stdin config.
inline constexpr size_t kMaxStdinBytes = 1024 * 1024;

/// Validates env + stdin, runs the handler and renders the outcome. Never throws.
DispatchOutput dispatch(const std::map<std::string, std::string>& env, std::string_view stdin_data, Handlers& handlers);

/// Parses a CNI_COMMAND value; false if unknown.
bool parse_command(std::string_view text, Command& out);

/// True if `id` is a valid container ID: [A-Za-z0-9][A-Za-z0-9_.-]*, at most 1024 chars.
bool valid_container_id(std::string_view id);

/// The VERSION answer for a config version (or the newest when unknown).
std::string version_info_json(std::string_view requested_version);

}  // namespace manifold::cni
