// RealIptablesRunner: binary lookup in fixed directories, save/restore through run_process in the
// pod netns, error messages that quote iptables' own complaint and the payload line it refers to,
// and the Istio-style backend detection.
#include "firewall/runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "cni/error.h"
#include "firewall/netns_process.h"
#include "util/log.h"

namespace manifold::firewall {

namespace {

// Headroom beyond the lock wait before a hung iptables is killed.
constexpr std::chrono::seconds kExtraTimeout{30};
// The probe payload used to decide whether the nft backend works in this netns: it creates a
// chain with a rule and removes both again in one transaction, leaving the table as it was.
constexpr const char* kNftProbe =
    "*nat\n"
    ":CNIMESH-PROBE - [0:0]\n"
    "-A CNIMESH-PROBE -p tcp -j RETURN\n"
    "-F CNIMESH-PROBE\n"
    "-X CNIMESH-PROBE\n"
    "COMMIT\n";

std::string first_line(const std::string& text) {
  const auto start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return {};
  std::string line = text.substr(start, text.find('\n', start) - start);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

// iptables-restore reports "Error occurred at line: N" (or "line N failed"); return that line of
// the payload so the message shows which rule was refused.
std::string failing_payload_line(const std::string& err, const std::string& payload) {
  std::size_t pos = err.find("line: ");
  std::size_t skip = 6;
  if (pos == std::string::npos) {
    pos = err.find("line ");
    skip = 5;
  }
  if (pos == std::string::npos) return {};
  std::size_t number = 0;
  for (std::size_t i = pos + skip; i < err.size() && i < pos + skip + 7 && err[i] >= '0' && err[i] <= '9'; ++i)
    number = number * 10 + static_cast<std::size_t>(err[i] - '0');
  if (number == 0) return {};
  std::size_t start = 0;
  for (std::size_t line = 1; line < number; ++line) {
    start = payload.find('\n', start);
    if (start == std::string::npos) return {};
    ++start;
  }
  return first_line(payload.substr(start, payload.find('\n', start) - start));
}

std::string where(Family family, Backend backend, const std::string& netns) {
  std::string text = "(" + std::string(family_name(family)) + ", " + std::string(backend_name(backend));
  if (!netns.empty()) text += ", netns " + netns;
  return text + ")";
}

}  // namespace

RealIptablesRunner::RealIptablesRunner(Options options) : options_(std::move(options)) {}

std::string RealIptablesRunner::lookup_binary(const std::string& name) const {
  for (const std::string& dir : options_.bin_dirs) {
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

std::string RealIptablesRunner::find_binary(const std::string& name) const {
  std::string path = lookup_binary(name);
  if (path.empty()) {
    std::string dirs;
    for (const std::string& dir : options_.bin_dirs) dirs += (dirs.empty() ? "" : ", ") + dir;
    throw cni::CniError(cni::ErrorCode::Firewall, name + " not found in " + dirs,
                        "install the iptables package of the node or set mesh.iptablesMode "
                        "(multiNetworkPolicy.iptablesMode) to the backend it has");
  }
  return path;
}

std::vector<std::string> RealIptablesRunner::child_env(Backend backend) const {
  std::vector<std::string> env{"LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  if (backend == Backend::Legacy && !options_.netns_path.empty())
    env.push_back("XTABLES_LOCKFILE=" + options_.netns_path);
  return env;
}

bool RealIptablesRunner::available(Family family, Backend backend) {
  return !lookup_binary(save_binary_name(family, backend)).empty() &&
         !lookup_binary(restore_binary_name(family, backend)).empty();
}

std::string RealIptablesRunner::save(Family family, Backend backend, Table table) {
  ProcessSpec spec;
  spec.binary = find_binary(save_binary_name(family, backend));
  spec.args = {"-t", std::string(table_name(table))};
  spec.env = child_env(backend);
  spec.netns_path = options_.netns_path;
  spec.timeout = std::chrono::seconds(options_.lock_wait_seconds) + kExtraTimeout;
  ProcessOutput out = run_process(spec);
  if (!out.ok())
    throw cni::CniError(cni::ErrorCode::Firewall,
                        save_binary_name(family, backend) + " -t " + std::string(table_name(table)) + " failed " +
                            where(family, backend, options_.netns_path) + ": " +
                            (out.err.empty() ? "exit status " + std::to_string(out.exit_code) : first_line(out.err)),
                        out.err);
  return std::move(out.out);
}

void RealIptablesRunner::restore(Family family, Backend backend, const std::string& payload) {
  ProcessSpec spec;
  spec.binary = find_binary(restore_binary_name(family, backend));
  spec.args = {"--noflush"};
  if (backend == Backend::Legacy) {
    spec.args.push_back("-w");
    spec.args.push_back(std::to_string(options_.lock_wait_seconds));
  }
  spec.env = child_env(backend);
  spec.stdin_data = payload;
  spec.netns_path = options_.netns_path;
  spec.timeout = std::chrono::seconds(options_.lock_wait_seconds) + kExtraTimeout;
  util::log_debug("firewall: ", restore_binary_name(family, backend), " --noflush ",
                  where(family, backend, options_.netns_path), " payload:\n", payload);
  const ProcessOutput out = run_process(spec);
  if (out.ok()) return;
  std::string msg = restore_binary_name(family, backend) + " failed " + where(family, backend, options_.netns_path) +
                    ": " + (out.err.empty() ? "exit status " + std::to_string(out.exit_code) : first_line(out.err));
  if (const std::string line = failing_payload_line(out.err, payload); !line.empty()) msg += " (at: " + line + ")";
  throw cni::CniError(cni::ErrorCode::Firewall, msg, out.err);
}

bool RealIptablesRunner::legacy_has_rules(Family family) {
  const std::string binary = lookup_binary(save_binary_name(family, Backend::Legacy));
  if (binary.empty()) return false;
  ProcessSpec spec;
  spec.binary = binary;  // no -t: only tables that already exist in the netns are listed
  spec.env = child_env(Backend::Legacy);
  spec.netns_path = options_.netns_path;
  spec.timeout = std::chrono::seconds(options_.lock_wait_seconds) + kExtraTimeout;
  const ProcessOutput out = run_process(spec);
  if (!out.ok()) return false;
  return out.out.starts_with("-A ") || out.out.find("\n-A ") != std::string::npos;
}

bool RealIptablesRunner::nft_usable() {
  const std::string save_path = lookup_binary(save_binary_name(Family::V4, Backend::Nft));
  if (save_path.empty() || lookup_binary(restore_binary_name(Family::V4, Backend::Nft)).empty()) return false;
  ProcessSpec version;
  version.binary = save_path;
  version.args = {"--version"};
  version.env = child_env(Backend::Nft);
  version.netns_path = options_.netns_path;
  version.timeout = kExtraTimeout;
  const ProcessOutput v = run_process(version);
  if (!v.ok() || v.out.find("nf_tables") == std::string::npos) return false;
  try {
    restore(Family::V4, Backend::Nft, kNftProbe);
  } catch (const cni::CniError& e) {
    util::log_debug("firewall: nft backend probe failed: ", e.msg());
    return false;
  }
  return true;
}

Backend RealIptablesRunner::detect() {
  if (legacy_has_rules(Family::V4) || legacy_has_rules(Family::V6)) return Backend::Legacy;
  if (nft_usable()) return Backend::Nft;
  if (available(Family::V4, Backend::Legacy)) return Backend::Legacy;
  throw cni::CniError(cni::ErrorCode::Firewall,
                      "no usable iptables backend: the nft backend does not work here and the legacy binaries are "
                      "missing");
}

}  // namespace manifold::firewall
