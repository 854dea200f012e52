// Implementation of `manifold install`: the binary copy, the service-account file copies and
// kubeconfig, the generated config, the watch loop (poll, compare a fingerprint of the inputs,
// re-apply on change, stop on SIGTERM/SIGINT) and the --check probe. The pure parts (primary
// choice, config and kubeconfig text) live in lib/cni/install_config.
#include "plugin/cli/install.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "cni/config_validate.h"
#include "cni/error.h"
#include "cni/install_config.h"
#include "plugin/cli/stop_signal.h"
#include "util/atomic_file.h"
#include "util/file_reader.h"
#include "util/error.h"
#include "util/log.h"

namespace manifold::plugin {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxConfigBytes = 1u << 20;
constexpr std::size_t kMaxSecretBytes = 1u << 20;
constexpr std::size_t kMaxTemplateBytes = 1u << 20;

// The inputs the generated files depend on; a change in any of them triggers a rewrite.
struct Inputs {
  std::string primary_name;  // "" when there is no primary config
  std::string primary_text;
  std::string token;
  std::string ca;
  bool outputs_present = false;  // our config (and kubeconfig) exist: a deleted one is rewritten
  bool operator==(const Inputs&) const = default;
};

struct Paths {
  std::string kube_dir;         // where the kubeconfig, token and CA are written
  std::string kube_host_dir;    // the same directory as the host sees it
  std::string kubeconfig_file;  // written
  std::string kubeconfig_host;  // referenced from the CNI config
};

Paths paths_for(const InstallOptions& o) {
  Paths p;
  p.kube_dir = o.kubeconfig_dir.empty() ? (fs::path(o.conf_dir) / "manifold.d").string() : o.kubeconfig_dir;
  p.kube_host_dir = o.kubeconfig_host_dir.empty() ? p.kube_dir : o.kubeconfig_host_dir;
  p.kubeconfig_file = (fs::path(p.kube_dir) / "manifold.kubeconfig").string();
  p.kubeconfig_host = (fs::path(p.kube_host_dir) / "manifold.kubeconfig").string();
  return p;
}

std::optional<std::string> read_if_exists(const std::string& path, std::size_t max) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return util::read_file_bounded(path, max);
}

// Writes unless the file already has exactly this content.
void write_if_changed(const std::string& path, const std::string& data, mode_t mode) {
  try {
    auto old = read_if_exists(path, data.size() + 1);
    if (old && *old == data) {
      util::log_debug("unchanged: ", path);
      return;
    }
  } catch (const util::IoError&) {
    // Unreadable or larger: rewrite it.
  }
  util::write_file_atomic(path, data, mode);
  util::log_verbose("wrote ", path);
}

bool files_identical(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  auto sa = fs::file_size(a, ec1), sb = fs::file_size(b, ec2);
  if (ec1 || ec2 || sa != sb) return false;
  try {
    return util::read_file_bounded(a, sa + 1) == util::read_file_bounded(b, sb + 1);
  } catch (const util::IoError&) {
    return false;
  }
}

void install_binary(const InstallOptions& o) {
  std::string src = o.bin_source.empty() ? "/proc/self/exe" : o.bin_source;
  if (!cni::is_plain_plugin_type(o.binary_name))
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "--binary-name must be a file name, got \"" + o.binary_name + "\"");
  std::error_code ec;
  if (!fs::is_directory(o.bin_dir, ec)) fs::create_directories(o.bin_dir, ec);
  if (ec) throw cni::CniError(cni::ErrorCode::Io, "cannot create " + o.bin_dir + ": " + ec.message());
  std::string dst = (fs::path(o.bin_dir) / o.binary_name).string();
  if (files_identical(src, dst)) {
    util::log_verbose("binary ", dst, " is up to date");
    return;
  }
  util::copy_file_atomic(src, dst, 0755);
  util::log_verbose("installed ", dst, " from ", src);
}

// Reads the primary config: the lexically first candidate that is not a meta-plugin config.
std::optional<std::pair<std::string, std::string>> read_primary(const std::string& conf_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(conf_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec)) names.push_back(it->path().filename().string());
  }
  for (const auto& name : cni::primary_candidates(names)) {
    std::string path = (fs::path(conf_dir) / name).string();
    std::string text = util::read_file_bounded(path, kMaxConfigBytes);
    Json j = Json::parse(text, nullptr, false);
    if (!j.is_discarded() && cni::is_meta_plugin_config(j)) {
      util::log_warning("skipping ", path, ": it is a meta-plugin config, not a primary network");
      continue;
    }
    return std::make_pair(name, text);
  }
  return std::nullopt;
}

bool outputs_present(const InstallOptions& o, const Paths& p) {
  std::error_code ec;
  bool conf = false;
  for (const char* ext : {"conf", "conflist"})
    conf |= fs::exists(fs::path(o.conf_dir) / (std::string(cni::kGeneratedConfigPrefix) + ext), ec);
  return conf && (o.no_kubeconfig || fs::exists(p.kubeconfig_file, ec));
}

Inputs read_inputs(const InstallOptions& o, const Paths& p) {
  Inputs in;
  in.outputs_present = outputs_present(o, p);
  if (auto primary = read_primary(o.conf_dir)) {
    in.primary_name = primary->first;
    in.primary_text = primary->second;
  }
  if (!o.no_kubeconfig) {
    in.token = read_if_exists((fs::path(o.service_account_dir) / "token").string(), kMaxSecretBytes).value_or("");
    in.ca = read_if_exists((fs::path(o.service_account_dir) / "ca.crt").string(), kMaxSecretBytes).value_or("");
  }
  return in;
}

std::string api_server(const InstallOptions& o) {
  if (!o.api_server.empty()) {
    if (o.api_server.rfind("https://", 0) != 0)
      throw cni::CniError(cni::ErrorCode::InvalidConfig, "--api-server must be an https:// URL");
    return o.api_server;
  }
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port)
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set; pass --api-server or "
                        "--no-kubeconfig");
  return cni::api_server_url(host, port);
}

void write_kubeconfig(const InstallOptions& o, const Paths& p, const Inputs& in) {
  std::string sa_token = (fs::path(o.service_account_dir) / "token").string();
  std::string sa_ca = (fs::path(o.service_account_dir) / "ca.crt").string();
  if (in.token.empty())
    throw cni::CniError(cni::ErrorCode::Io, "no service-account token at " + sa_token +
                                                " (run in a pod with a service account, or pass --no-kubeconfig)");
  if (in.ca.empty()) throw cni::CniError(cni::ErrorCode::Io, "no service-account CA at " + sa_ca);
  std::error_code ec;
  fs::create_directories(p.kube_dir, ec);
  if (ec) throw cni::CniError(cni::ErrorCode::Io, "cannot create " + p.kube_dir + ": " + ec.message());
  fs::permissions(p.kube_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  cni::KubeconfigSettings k;
  k.server = api_server(o);
  if (o.reference_service_account) {
    k.token_file = sa_token;
    k.ca_file = sa_ca;
  } else {
    // The host cannot see the pod's service-account volume: keep 0600 copies next to the kubeconfig.
    write_if_changed((fs::path(p.kube_dir) / "token").string(), in.token, 0600);
    write_if_changed((fs::path(p.kube_dir) / "ca.crt").string(), in.ca, 0644);
    k.token_file = (fs::path(p.kube_host_dir) / "token").string();
    k.ca_file = (fs::path(p.kube_host_dir) / "ca.crt").string();
  }
  write_if_changed(p.kubeconfig_file, cni::render_kubeconfig(k), 0600);
}

void remove_generated(const std::string& conf_dir, const std::string& keep) {
  for (const char* ext : {"conf", "conflist"}) {
    std::string name = std::string(cni::kGeneratedConfigPrefix) + ext;
    if (name == keep) continue;
    std::string path = (fs::path(conf_dir) / name).string();
    std::error_code ec;
    if (fs::remove(path, ec)) util::log_verbose("removed ", path);
  }
}

// --name, unless it is the default: then the name the node's pods are already attached under, when
// there is one (cni::established_network_name: our generated config's, else a replaced Multus's).
std::string network_name_for(const InstallOptions& o) {
  if (o.network_name != cni::kDefaultNetworkName) return o.network_name;
  std::map<std::string, Json> configs;
  std::error_code ec;
  for (fs::directory_iterator it(o.conf_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code fec;
    if (!(name.ends_with(".conf") || name.ends_with(".conflist")) || !it->is_regular_file(fec)) continue;
    try {
      configs[name] = Json::parse(util::read_file_bounded(it->path().string(), kMaxConfigBytes), nullptr, false);
    } catch (const util::IoError&) {
      // Unreadable: it names nothing.
    }
  }
  std::string established = cni::established_network_name(configs);
  if (established.empty()) return o.network_name;
  if (established != o.network_name)
    util::log_verbose("keeping the network name \"", established, "\" the node's pods are attached under");
  return established;
}

void write_config(const InstallOptions& o, const Paths& p, const Inputs& in) {
  Json primary = Json::parse(in.primary_text, nullptr, false);
  if (primary.is_discarded() || !primary.is_object())
    throw cni::CniError(
        cni::ErrorCode::InvalidConfig,
        "the primary CNI config " + (fs::path(o.conf_dir) / in.primary_name).string() + " is not a JSON object");
  cni::GenerateSettings s;
  s.network_name = network_name_for(o);
  s.cni_version = o.cni_version;
  s.force_cni_version = o.force_cni_version;
  s.kubeconfig_path = o.no_kubeconfig ? std::string() : p.kubeconfig_host;
  if (!o.config_template.empty()) s.template_text = util::read_file_bounded(o.config_template, kMaxTemplateBytes);
  auto generated = cni::generate_config(primary, s);
  if (in.primary_name < generated.file_name)
    util::log_warning("the primary config ", in.primary_name, " sorts before ", generated.file_name,
                      ": the runtime will use it instead of manifold; rename it");
  util::log_verbose("wrapping primary config ", in.primary_name, " (cniVersion ",
                    generated.config.value("cniVersion", ""), ")");
  write_if_changed((fs::path(o.conf_dir) / generated.file_name).string(), generated.config.dump(2) + "\n", 0644);
  remove_generated(o.conf_dir, generated.file_name);
}

// Applies the inputs (only files whose content changes are rewritten).
void apply(const InstallOptions& o, const Paths& p, const Inputs& in) {
  if (!o.no_kubeconfig) write_kubeconfig(o, p, in);
  if (in.primary_name.empty()) {
    util::log_warning("no primary CNI config in ", o.conf_dir, "; the generated config is removed until one appears");
    remove_generated(o.conf_dir, "");
    return;
  }
  write_config(o, p, in);
}

int check_installation(const InstallOptions& o) {
  Paths p = paths_for(o);
  std::vector<std::string> problems;
  std::string bin = (fs::path(o.bin_dir) / o.binary_name).string();
  if (::access(bin.c_str(), X_OK) != 0) problems.push_back(bin + " is missing or not executable");
  std::string conf;
  for (const char* ext : {"conflist", "conf"}) {
    std::string path = (fs::path(o.conf_dir) / (std::string(cni::kGeneratedConfigPrefix) + ext)).string();
    std::error_code ec;
    if (fs::exists(path, ec)) conf = path;
  }
  if (conf.empty()) {
    problems.push_back("no " + std::string(cni::kGeneratedConfigPrefix) + "conf/.conflist in " + o.conf_dir);
  } else {
    try {
      auto found = cni::validate_config_text(util::read_file_bounded(conf, kMaxConfigBytes));
      for (const auto& f : found)
        if (!f.warning) problems.push_back(conf + ": " + cni::format_problem(f));
    } catch (const util::IoError& e) {
      problems.push_back(e.msg());
    }
  }
  std::error_code ec;
  if (!o.no_kubeconfig && !fs::exists(p.kubeconfig_file, ec)) problems.push_back(p.kubeconfig_file + " is missing");
  for (const auto& problem : problems) std::cout << "not ready: " << problem << "\n";
  if (problems.empty()) std::cout << "ready: " << bin << ", " << conf << "\n";
  return problems.empty() ? 0 : 1;
}

/// One installation: waits up to --primary-wait for a primary config, then writes the outputs.
int install_once(const InstallOptions& o, const Paths& p) {
  Inputs in = read_inputs(o, p);
  for (int waited = 0; in.primary_name.empty() && waited < o.primary_wait_s && !stop_requested(); ++waited) {
    interruptible_sleep(1000);
    in = read_inputs(o, p);
  }
  if (in.primary_name.empty()) {
    util::log_error("no primary CNI config (.conf/.conflist) in ", o.conf_dir);
    return 1;
  }
  apply(o, p, in);
  return 0;
}

/// The --watch loop: regenerates the outputs whenever the inputs change, retrying after errors,
/// until a signal or --watch-iterations; removes the outputs on exit with --cleanup-on-exit.
int watch_and_regenerate(const InstallOptions& o, const Paths& p) {
  std::optional<Inputs> applied;
  for (long i = 0; !stop_requested() && (o.watch_iterations == 0 || i < o.watch_iterations); ++i) {
    try {
      Inputs in = read_inputs(o, p);
      if (!applied || !(*applied == in)) {
        if (applied) util::log_verbose("inputs changed; regenerating");
        apply(o, p, in);
        in.outputs_present = outputs_present(o, p);
        applied = in;
      }
    } catch (const cni::CniError& e) {
      util::log_error(e.msg(), "; retrying");
      applied.reset();
    } catch (const util::IoError& e) {
      util::log_error(e.msg(), "; retrying");
      applied.reset();
    } catch (const std::exception& e) {
      util::log_error("unexpected error: ", e.what(), "; retrying");
      applied.reset();
    }
    if (o.watch_iterations == 0 || i + 1 < o.watch_iterations) interruptible_sleep(o.poll_interval_ms);
  }
  if (o.cleanup_on_exit) remove_generated(o.conf_dir, "");
  util::log_verbose(stop_requested() ? "stopped by signal" : "watch finished");
  return 0;
}

}  // namespace

int run_install(const InstallOptions& o) {
  util::Logger::instance().set_level(util::LogLevel::Verbose);
  util::Logger::instance().set_to_stderr(true);
  return run_installation(o);
}

int run_installation(const InstallOptions& o) {
  if (o.poll_interval_ms < 50 || o.poll_interval_ms > 3600000) {
    std::cerr << "manifold install: --poll-interval must be between 50 and 3600000 ms\n";
    return 2;
  }
  if (o.watch_iterations < 0 || o.primary_wait_s < 0) {
    std::cerr << "manifold install: --watch-iterations and --primary-wait must not be negative\n";
    return 2;
  }
  if (o.check) return check_installation(o);
  Paths p = paths_for(o);
  install_stop_handlers();
  try {
    if (!o.skip_binary) install_binary(o);
    if (!o.watch) return install_once(o, p);
  } catch (const cni::CniError& e) {
    util::log_error(e.msg());
    return 1;
  } catch (const util::IoError& e) {
    util::log_error(e.msg());
    return 1;
  }
  return watch_and_regenerate(o, p);
}

}  // namespace manifold::plugin
