// PluginInvoker: lookup, environment, execution and the mapping of a delegate's outcome onto a
// result or a CniError. Text that a delegate printed is untrusted: it is cut to a bounded tail and
// made valid single-line UTF-8 before it becomes part of an error message or a log line.
#include "exec/plugin_invoker.h"

#include <cctype>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "cni/error.h"
#include "exec/builtin_passthru.h"
#include "exec/plugin_finder.h"
#include "util/env.h"
#include "util/json.h"
#include "util/log.h"

namespace manifold::exec {

namespace {

/// `text` as valid UTF-8 (invalid bytes become U+FFFD) with every run of control characters or
/// whitespace collapsed into one space and the ends trimmed.
std::string single_line(std::string_view text) {
  std::string valid =
      Json::parse(Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace)).get<std::string>();
  std::string out;
  out.reserve(valid.size());
  bool space = false;
  for (char ch : valid) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += ch;
  }
  return out;
}

/// The last `limit` bytes of `text` (starting on a UTF-8 boundary) as one clean line.
std::string tail(std::string_view text, size_t limit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  bool cut = text.size() > limit;
  if (cut) {
    text.remove_prefix(text.size() - limit);
    while (!text.empty() && (static_cast<unsigned char>(text.front()) & 0xC0) == 0x80) text.remove_prefix(1);
  }
  std::string line = single_line(text);
  return cut ? "..." + line : line;
}

/// Copies the delegate's stderr into our log, one verbose line per stderr line, bounded.
void log_stderr(const std::string& type, std::string_view err) {
  if (err.empty()) return;
  std::string_view shown = err.substr(0, kLoggedStderrBytes);
  while (!shown.empty()) {
    size_t nl = shown.find('\n');
    std::string line = single_line(shown.substr(0, nl));
    if (!line.empty()) util::log_verbose(type, ": ", line);
    if (nl == std::string_view::npos) break;
    shown.remove_prefix(nl + 1);
  }
  if (err.size() > kLoggedStderrBytes) {
    util::log_verbose(type, ": (", err.size() - kLoggedStderrBytes, " more bytes of stderr not logged)");
  }
}

/// Throws the delegate's own CniError when `out` is CNI error JSON ({"code": n > 0, "msg": "..."}).
void throw_if_cni_error(const std::string& type, const std::string& command, const std::string& out) {
  Json j = Json::parse(out, nullptr, false);
  if (!j.is_object()) return;
  auto code = j.find("code");
  if (code == j.end() || !code->is_number_integer() || code->get<long long>() <= 0 ||
      code->get<long long>() > static_cast<long long>(UINT32_MAX)) {
    return;
  }
  auto msg = j.find("msg");
  auto details = j.find("details");
  if ((msg != j.end() && !msg->is_string()) || (details != j.end() && !details->is_string())) return;
  auto number = static_cast<unsigned>(code->get<long long>());
  std::string text = msg != j.end() ? msg->get<std::string>() : "";
  if (text.empty()) text = "plugin \"" + type + "\" failed (" + command + ") with error code " + std::to_string(number);
  util::log_verbose("plugin ", type, " (", command, ") returned error ", number, ": ", text);
  throw cni::CniError(number, std::move(text), details != j.end() ? details->get<std::string>() : "");
}

/// "exit status N" or "killed by signal N (name)".
std::string describe_exit(const ProcessResult& r) {
  if (r.term_signal != 0) {
    const char* name = ::sigdescr_np(r.term_signal);
    return "killed by signal " + std::to_string(r.term_signal) + (name ? std::string(" (") + name + ")" : "");
  }
  return "exit status " + std::to_string(r.exit_code);
}

void check_no_nul(const std::string& type, const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (entry.find('\0') == std::string::npos) continue;
    std::string name = entry.substr(0, std::min(entry.find('='), entry.find('\0')));
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "environment variable " + single_line(name) + " for plugin \"" +
                                                           type + "\" contains a NUL byte");
  }
}

}  // namespace

PluginInvoker::PluginInvoker(ProcessRunner& runner, std::vector<std::string> search_dirs,
                             std::chrono::milliseconds timeout, std::vector<std::string> base_env,
                             std::vector<std::string> extra_env)
    : runner_(runner),
      search_dirs_(std::move(search_dirs)),
      timeout_(timeout),
      base_env_(std::move(base_env)),
      extra_env_(std::move(extra_env)) {}

std::string PluginInvoker::invoke(const std::string& type, const PluginCall& call) {
  ProcessRequest request;
  request.path = find_plugin_or_builtin(type, search_dirs_);
  if (request.path.empty()) {
    util::log_debug("plugin ", type, " (", call.command, ") is not installed; answering with the built-in one");
    return run_builtin_passthru(call.command, call.config);
  }
  request.argv = {request.path};
  request.env = plugin_environment(base_env_, call, extra_env_);
  check_no_nul(type, request.env);
  request.stdin_data = call.config;
  request.timeout = timeout_;
  util::log_debug("running plugin ", type, " (", call.command, ") ", request.path, " ifname=", call.ifname);

  ProcessResult r = runner_.run(request);
  log_stderr(type, r.stderr_data);
  const std::string who = "plugin \"" + type + "\"";
  if (r.exec_errno != 0) {
    throw cni::CniError(cni::ErrorCode::DelegateFailed,
                        "failed to run " + who + " (" + request.path + "): " + std::strerror(r.exec_errno));
  }
  if (r.timed_out) {
    throw cni::CniError(cni::ErrorCode::DelegateFailed,
                        who + " timed out after " + std::to_string(timeout_.count()) + " ms (killed)");
  }
  if (r.exit_code == 0 && r.term_signal == 0) {
    if (r.output_truncated && r.stdout_data.size() >= request.max_output) {
      throw cni::CniError(cni::ErrorCode::DelegateFailed, who + " (" + call.command + ") printed more than " +
                                                              std::to_string(request.max_output) + " bytes");
    }
    util::log_debug("plugin ", type, " (", call.command, ") succeeded");
    return std::move(r.stdout_data);
  }
  throw_if_cni_error(type, call.command, r.stdout_data);
  std::string msg = who + " failed (" + call.command + "): " + describe_exit(r);
  std::string text = tail(r.stderr_data.empty() ? r.stdout_data : r.stderr_data, kFailureTailBytes);
  if (!text.empty()) msg += ": " + text;
  throw cni::CniError(cni::ErrorCode::DelegateFailed, std::move(msg));
}

bool passes_to_delegate(std::string_view name, const std::vector<std::string>& extra) {
  static constexpr std::string_view kAllowed[] = {"PATH", "LD_LIBRARY_PATH", "TMPDIR", "XTABLES_LOCKFILE", "TZ",
                                                  "LANG", "LANGUAGE"};
  for (std::string_view allowed : kAllowed)
    if (name == allowed) return true;
  if (name.size() > 3 && name.substr(0, 3) == "LC_") return true;
  for (const std::string& pattern : extra)
    if (util::env_name_matches(pattern, std::string(name))) return true;
  return false;
}

std::vector<std::string> plugin_environment(const std::vector<std::string>& base_env, const PluginCall& call,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  std::unordered_map<std::string, size_t> position;
  auto put = [&](std::string name, std::string entry) {
    auto [it, inserted] = position.emplace(std::move(name), out.size());
    if (inserted) {
      out.push_back(std::move(entry));
    } else {
      out[it->second] = std::move(entry);
    }
  };
  for (const std::string& entry : base_env) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = entry.substr(0, eq);
    if (!passes_to_delegate(name, extra)) continue;
    put(std::move(name), entry);
  }
  auto set = [&](const char* name, const std::string& value, bool always) {
    if (always || !value.empty()) put(name, std::string(name) + "=" + value);
  };
  set("CNI_COMMAND", call.command, true);
  set("CNI_CONTAINERID", call.container_id, false);
  set("CNI_NETNS", call.netns, false);
  set("CNI_IFNAME", call.ifname, false);
  set("CNI_ARGS", call.cni_args, false);
  set("CNI_PATH", call.cni_path, true);
  return out;
}

}  // namespace manifold::exec
