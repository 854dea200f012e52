// Implementation of the CNI dispatcher: environment table, version gates per verb, and the single
// error rendering site.
#include "cni/skel.h"

#include <vector>

#include "cni/error.h"
#include "util/error.h"
#include "util/log.h"
#include "util/ifname.h"

namespace manifold::cni {

namespace {

struct EnvRule {
  const char* name;
  bool add, del, check, gc, status;
};

// Which variables each verb requires (the spec's table; DEL tolerates a missing CNI_NETNS).
constexpr EnvRule kEnvRules[] = {
    {"CNI_CONTAINERID", true, true, true, false, false},
    {"CNI_NETNS", true, false, true, false, false},
    {"CNI_IFNAME", true, true, true, false, false},
    {"CNI_PATH", true, true, true, true, true},
};

bool required(const EnvRule& r, Command c) {
  switch (c) {
    case Command::Add:
      return r.add;
    case Command::Del:
      return r.del;
    case Command::Check:
      return r.check;
    case Command::Gc:
      return r.gc;
    case Command::Status:
      return r.status;
    case Command::Version:
      return false;
  }
  return false;
}

std::string env_or_empty(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

/// Deepest nesting accepted in the stdin config (real ones nest about ten levels).
constexpr int kMaxConfigDepth = 128;

const std::string& newest_version() { return supported_versions().back(); }

// The version errors are printed in: the config's when it is a supported one.
std::string error_version(const std::string& config_version) {
  return is_supported_version(config_version) ? config_version : newest_version();
}

void require_min_version(const SpecVersion& have, SpecVersion need, const char* verb) {
  if (have < need)
    throw CniError(ErrorCode::IncompatibleVersion, std::string("config version does not allow ") + verb +
                                                       " (needs cniVersion " + need.str() + " or later, got " +
                                                       have.str() + ")");
}

Invocation build_invocation(const std::map<std::string, std::string>& env, std::string_view stdin_data,
                            Command command) {
  Invocation inv;
  inv.command = command;
  std::vector<std::string> missing;
  for (const auto& rule : kEnvRules)
    if (required(rule, command) && env_or_empty(env, rule.name).empty()) missing.push_back(rule.name);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : " ") + m;
    throw CniError(ErrorCode::InvalidEnv, "required env variables [" + list + "] missing");
  }
  inv.container_id = env_or_empty(env, "CNI_CONTAINERID");
  inv.netns = env_or_empty(env, "CNI_NETNS");
  inv.ifname = env_or_empty(env, "CNI_IFNAME");
  inv.path = env_or_empty(env, "CNI_PATH");
  inv.args_text = env_or_empty(env, "CNI_ARGS");
  if (!inv.container_id.empty() && !valid_container_id(inv.container_id))
    throw CniError(ErrorCode::InvalidEnv,
                   "invalid CNI_CONTAINERID: must be alphanumeric with '_', '.', '-' and at most 1024 characters");
  if (!inv.ifname.empty() && !util::is_valid_ifname(inv.ifname))
    throw CniError(ErrorCode::InvalidEnv, "invalid CNI_IFNAME \"" + inv.ifname.substr(0, 32) +
                                              "\": must be 1-15 characters of [A-Za-z0-9_.-]");
  if (inv.netns.size() > 4096 || inv.path.size() > 64 * 1024)
    throw CniError(ErrorCode::InvalidEnv, "CNI_NETNS or CNI_PATH is too long");
  inv.args = CniArgs::parse(inv.args_text);
  inv.stdin_data = std::string(stdin_data);
  return inv;
}

Json parse_config_object(std::string_view stdin_data) {
  if (stdin_data.size() > kMaxStdinBytes)
    throw CniError(ErrorCode::InvalidConfig,
                   "network config on stdin is larger than 1 MiB (" + std::to_string(stdin_data.size()) + " bytes)");
  // nlohmann's parser ends the document at a NUL byte and would ignore whatever follows it.
  if (stdin_data.find('\0') != std::string_view::npos)
    throw CniError(ErrorCode::Decoding, "failed to parse network config on stdin: it contains a NUL byte");
  // Bounded nesting: copying or printing a deeper document recurses far enough to overflow the stack.
  Json config = Json::parse(
      stdin_data,
      [](int depth, Json::parse_event_t, Json&) {
        if (depth > kMaxConfigDepth)
          throw CniError(ErrorCode::Decoding, "failed to parse network config on stdin: JSON nested deeper than " +
                                                  std::to_string(kMaxConfigDepth) + " levels");
        return true;
      },
      false);
  if (config.is_discarded())
    throw CniError(ErrorCode::Decoding, "failed to parse network config on stdin: invalid JSON");
  if (!config.is_object())
    throw CniError(ErrorCode::Decoding, "failed to parse network config on stdin: not a JSON object");
  return config;
}

std::string config_version_of(const Json& config) {
  auto it = config.find("cniVersion");
  if (it == config.end()) return "";
  if (!it->is_string()) throw CniError(ErrorCode::InvalidConfig, "invalid config: key \"cniVersion\" must be a string");
  return it->get<std::string>();
}

/// The verb CNI_COMMAND names; CniError(InvalidEnv) when it is missing or unknown.
Command command_of(const std::map<std::string, std::string>& env) {
  Command command;
  std::string command_text = env_or_empty(env, "CNI_COMMAND");
  if (command_text.empty()) throw CniError(ErrorCode::InvalidEnv, "required env variables [CNI_COMMAND] missing");
  if (!parse_command(command_text, command))
    throw CniError(ErrorCode::InvalidEnv, "unknown CNI_COMMAND \"" + command_text.substr(0, 32) + "\"");
  return command;
}

/// VERSION's answer. It may come with an empty or partial stdin; only the requested version matters.
std::string version_answer(std::string_view stdin_data) {
  std::string requested;
  Json config = Json::parse(stdin_data.substr(0, kMaxStdinBytes), nullptr, false);
  if (config.is_object() && config.contains("cniVersion") && config["cniVersion"].is_string())
    requested = config["cniVersion"].get<std::string>();
  return version_info_json(requested) + "\n";
}

/// Runs the handler of `inv`'s verb, once the config's version allows the verb.
std::string run_verb(const Invocation& inv, const SpecVersion& version, Handlers& handlers) {
  switch (inv.command) {
    case Command::Add:
      return handlers.add(inv);
    case Command::Del:
      return handlers.del(inv);
    case Command::Check:
      require_min_version(version, {0, 4, 0}, "CHECK");
      return handlers.check(inv);
    case Command::Gc:
      require_min_version(version, {1, 1, 0}, "GC");
      return handlers.gc(inv);
    case Command::Status:
      require_min_version(version, {1, 1, 0}, "STATUS");
      return handlers.status(inv);
    case Command::Version:
      break;
  }
  return "";
}

/// The one place an error is printed: logged (`with_code`: prefixed with its code), and rendered as
/// the spec's error object in the config's version (or the newest one).
DispatchOutput error_output(const CniError& e, const std::string& config_version, bool with_code) {
  if (with_code) {
    util::log_error("CNI error ", e.code(), ": ", e.msg());
  } else {
    util::log_error(e.msg());
  }
  return {e.to_json(error_version(config_version)).dump(4, ' ', false, Json::error_handler_t::replace) + "\n", 1};
}

}  // namespace

bool parse_command(std::string_view text, Command& out) {
  if (text == "ADD")
    out = Command::Add;
  else if (text == "DEL")
    out = Command::Del;
  else if (text == "CHECK")
    out = Command::Check;
  else if (text == "GC")
    out = Command::Gc;
  else if (text == "STATUS")
    out = Command::Status;
  else if (text == "VERSION")
    out = Command::Version;
  else
    return false;
  return true;
}

bool valid_container_id(std::string_view id) {
  if (id.empty() || id.size() > 1024) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
  }
  return true;
}

std::string version_info_json(std::string_view requested_version) {
  Json j;
  j["cniVersion"] = is_supported_version(requested_version) ? std::string(requested_version) : newest_version();
  j["supportedVersions"] = supported_versions();
  return j.dump();
}

DispatchOutput dispatch(const std::map<std::string, std::string>& env, std::string_view stdin_data,
                        Handlers& handlers) {
  std::string config_version;
  try {
    const Command command = command_of(env);
    if (command == Command::Version) return {version_answer(stdin_data), 0};
    Json config = parse_config_object(stdin_data);
    config_version = config_version_of(config);
    SpecVersion version = require_supported_version(config_version);
    Invocation inv = build_invocation(env, stdin_data, command);
    inv.config = std::move(config);
    inv.version = version.str();
    return {run_verb(inv, version, handlers), 0};
  } catch (const CniError& e) {
    return error_output(e, config_version, true);
  } catch (const util::IoError& e) {
    return error_output(CniError(ErrorCode::Io, e.msg()), config_version, true);
  } catch (const std::exception& e) {
    return error_output(CniError(ErrorCode::Internal, std::string("internal error: ") + e.what()), config_version,
                        false);
  }
}

}  // namespace manifold::cni
