// Test harness for plugin::Commands: a "world" of fakes behind plugin::Services — a scripted process
// runner that behaves like simple delegate plugins (bridge/macvlan/ptp answer a result in their
// config's cniVersion and create their interface in a fake network namespace, tuning echoes
// prevResult, DEL removes the interface), one MemoryCache shared by every invocation, fake network
// namespaces keyed by path, a scripted Kubernetes transport and fake clock/sleep/files. Each verb is
// driven through cni::dispatch, so the error JSON path is exercised exactly as the plugin binary
// would exercise it. Delegate binaries are empty executable files in a temp binDir, because
// commands look plugins up on disk before anything runs.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "forward_transport.h"
#include "cni/skel.h"
#include "exec/process.h"
#include "firewall/fake_runner.h"
#include "http/http.h"
#include "http/kubeconfig.h"
#include "http/retry.h"
#include "kubelet/grpc_call.h"
#include "netlink/fake_net_ops.h"
#include "plugin/cni/verbs.h"
#include "store/cache.h"
#include "store/memory_cache.h"
#include "temp_dir.h"
#include "util/file_reader.h"
#include "util/file_writer.h"
#include "util/json.h"
#include "util/log.h"

namespace manifold::test {

/// A Cache that forwards every call to a shared cache, so state survives across invocations.
class ForwardingCache final : public store::Cache {
 public:
  /// Forwards to `inner`, which must outlive this object.
  explicit ForwardingCache(store::Cache& inner) : inner_(inner) {}
  std::optional<store::ContainerRecord> load(const store::EntryKey& key) override { return inner_.load(key); }
  void save(const store::ContainerRecord& record) override { inner_.save(record); }
  bool mark_started(const store::ContainerRecord& record, std::size_t count) override {
    return inner_.mark_started(record, count);
  }
  bool mark_state(const store::ContainerRecord& record) override { return inner_.mark_state(record); }
  void remove(const store::EntryKey& key) override { inner_.remove(key); }
  std::vector<store::EntryKey> list() override { return inner_.list(); }
  std::vector<store::EntryKey> list(const std::string& id) override { return inner_.list(id); }
  bool is_idle(const std::string& id) override { return inner_.is_idle(id); }
  int sweep_orphan_locks() override { return inner_.sweep_orphan_locks(); }
  std::unique_ptr<store::LockGuard> lock(const std::string& id) override { return inner_.lock(id); }

 private:
  store::Cache& inner_;
};

/// An HttpTransport that forwards to a shared FakeHttpTransport.
using ForwardingTransport = Forward<http::FakeHttpTransport>;

/// An IptablesRunner that forwards to a shared FakeIptablesRunner (the engine owns its runners).
class ForwardingIptables final : public firewall::IptablesRunner {
 public:
  /// Forwards to `inner`, which must outlive this object.
  explicit ForwardingIptables(firewall::FakeIptablesRunner& inner) : inner_(inner) {}
  std::string save(firewall::Family f, firewall::Backend b, firewall::Table t) override { return inner_.save(f, b, t); }
  void restore(firewall::Family f, firewall::Backend b, const std::string& p) override { inner_.restore(f, b, p); }
  firewall::Backend detect() override { return inner_.detect(); }
  bool available(firewall::Family f, firewall::Backend b) override { return inner_.available(f, b); }

 private:
  firewall::FakeIptablesRunner& inner_;
};

/// One delegate execution, decoded from a ProcessRequest.
struct Call {
  std::string type;                  ///< plugin file name
  std::string command;               ///< CNI_COMMAND
  std::string container_id;          ///< CNI_CONTAINERID
  std::string ifname;                ///< CNI_IFNAME
  std::optional<std::string> netns;  ///< CNI_NETNS, nullopt when absent
  std::optional<std::string> args;   ///< CNI_ARGS, nullopt when absent
  std::string cni_path;              ///< CNI_PATH
  std::vector<std::string> env;      ///< the complete environment
  std::string stdin_data;            ///< exact stdin bytes
  /// stdin parsed.
  Json config() const { return Json::parse(stdin_data); }
  /// "type COMMAND ifname", for compact order assertions.
  std::string brief() const { return type + " " + command + " " + ifname; }
};

/// The value of `name` in a "K=V" environment, nullopt when absent.
inline std::optional<std::string> env_value(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  return std::nullopt;
}

/// A delegate answer carrying CNI error JSON (exit status 1).
inline exec::ProcessResult cni_error_answer(unsigned code, const std::string& msg) {
  exec::ProcessResult r;
  r.exit_code = 1;
  r.stdout_data = Json{{"cniVersion", "1.0.0"}, {"code", code}, {"msg", msg}}.dump();
  return r;
}

/// Runs `fn` in a forked child (its stdout and stderr sent to /dev/null, crash signals at their
/// default action) and returns true when the child finished and `fn` returned true. Probes code with
/// a known memory error, so that a crash fails one test instead of killing the test binary. `fn`
/// must not use Catch assertions; the child's changes (to a World, say) stay in the child.
inline bool survives_in_child(const std::function<bool()>& fn) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) std::signal(sig, SIG_DFL);
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    bool ok = false;
    try {
      ok = fn();
    } catch (...) {}
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// The CNI environment of one invocation; empty values are left out of the environment.
struct Env {
  std::string container_id = "ctr1";          ///< CNI_CONTAINERID
  std::string ifname = "eth0";                ///< CNI_IFNAME
  std::optional<std::string> netns;           ///< CNI_NETNS; default: the world's pod netns file
  std::string args;                           ///< CNI_ARGS
  std::string path = "/nonexistent/cni/bin";  ///< CNI_PATH (plugins are found through binDir)
};

/// Everything the commands under test touch.
class World {
 public:
  /// Subnet prefix of the address each result-producing fake plugin hands out.
  std::map<std::string, std::string> subnets = {
      {"bridge", "10.244.0."}, {"macvlan", "192.168.50."}, {"ptp", "172.16.0."}, {"sriov", "10.56.0."}};
  /// Plugins that echo their prevResult (in their own cniVersion) instead of creating anything.
  std::set<std::string> echo_plugins = {"tuning"};

  /// Delegate executions answer through this first when it returns a result (failure injection).
  std::function<std::optional<exec::ProcessResult>(const Call&)> intercept;

  exec::FakeProcessRunner runner;
  /// The iptables of every pod namespace (network scoping and MultiNetworkPolicy rules).
  firewall::FakeIptablesRunner iptables;
  store::MemoryCache cache{std::chrono::milliseconds(2000)};
  http::FakeHttpTransport http;
  std::shared_ptr<util::FakeClock> clock = std::make_shared<util::FakeClock>();
  /// Records every wait (readiness polling and API retries) and advances `clock` by it.
  std::shared_ptr<util::FakeSleeper> sleeper = std::make_shared<util::FakeSleeper>(*clock);
  std::shared_ptr<util::FakeFileReader> files = std::make_shared<util::FakeFileReader>();
  /// Device-info files the engine writes land in `files`.
  std::shared_ptr<util::FakeFileWriter> file_writer = std::make_shared<util::FakeFileWriter>(*files);
  /// The kubelet's PodResources List: its serialised answer (unset: the socket refuses, as when
  /// no kubelet listens). Every call is counted in `kubelet_calls`.
  std::function<std::string(const std::string& socket, std::chrono::milliseconds timeout)> pod_resources;
  int kubelet_calls = 0;
  /// Credentials find_auth answers (nullopt: no Kubernetes).
  std::optional<http::ClusterAuth> auth;
  /// Paths file_exists answers true for.
  std::set<std::string> existing_files;
  /// Every cniDir passed to open_cache, every netns path opened, every kubeconfig looked up.
  std::vector<std::string> cache_dirs, opened_netns, auth_lookups;
  /// Transports opened.
  int transports_opened = 0;
  std::vector<std::string> tls_session_dirs;  ///< the session directory of each transport opened

  TempDir bin;   ///< binDir with the fake plugin executables
  TempDir work;  ///< holds the netns files

  World() {
    for (const char* name : {"bridge", "macvlan", "ptp", "tuning", "sriov"}) make_plugin(name);
    netns_path = make_netns_file("pod-netns");
    runner.set_handler([this](const exec::ProcessRequest& r) { return answer(r); });
  }
  ~World() {
    // Commands reconfigure the process-wide logger; leave it as every other test expects it.
    auto& log = util::Logger::instance();
    log.set_file_sink(nullptr);
    log.set_to_stderr(true);
    log.set_level(util::LogLevel::Error);
    log.set_context("", "");
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  /// The default CNI_NETNS: an existing file, so DEL passes it on.
  std::string netns_path;

  /// The cache key of container `id`'s entry in the tests' network ("manifold-net") on `ifname`.
  static store::EntryKey key(const std::string& id, const std::string& ifname = "eth0") {
    return {id, "manifold-net", ifname};
  }
  /// The container IDs of every cache entry, in key order.
  std::vector<std::string> ids() {
    std::vector<std::string> out;
    for (const auto& k : cache.list()) out.push_back(k.container_id);
    return out;
  }

  /// Creates an empty executable plugin file in binDir.
  void make_plugin(const std::string& name) {
    auto p = bin.path() / name;
    std::ofstream(p).close();
    REQUIRE(::chmod(p.c_str(), 0755) == 0);
  }
  /// Creates an (empty) file standing for a network namespace path and returns its path.
  std::string make_netns_file(const std::string& name) {
    auto p = work.path() / name;
    std::ofstream(p).close();
    return p.string();
  }

  /// The fake namespace at `path` (created on first use).
  netlink::FakeNetnsState& ns(const std::string& path) {
    auto& s = namespaces_[path];
    if (!s) s = netlink::FakeNetnsState::with_defaults();
    return *s;
  }
  /// The default pod namespace.
  netlink::FakeNetnsState& ns() { return ns(netns_path); }
  /// True when `name` is a link of the namespace at `path`.
  bool has_link(const std::string& path, const std::string& name) {
    for (const auto& l : ns(path).links)
      if (l.name == name) return true;
    return false;
  }

  /// The Services the commands get.
  plugin::Services services() {
    plugin::Services s;
    s.runner = &runner;
    s.open_cache = [this](const std::string& dir) -> std::unique_ptr<store::Cache> {
      cache_dirs.push_back(dir);
      return std::make_unique<ForwardingCache>(cache);
    };
    s.open_netns = [this](const std::string& path) -> std::unique_ptr<netlink::NetOps> {
      opened_netns.push_back(path);
      ns(path);
      return std::make_unique<netlink::FakeNetOps>(namespaces_[path], path);
    };
    s.open_iptables = [this](const std::string&, int) -> std::unique_ptr<firewall::IptablesRunner> {
      return std::make_unique<ForwardingIptables>(iptables);
    };
    s.file_exists = [this](const std::string& path) { return existing_files.count(path) > 0; };
    s.find_auth = [this](const std::string& kubeconfig) {
      auth_lookups.push_back(kubeconfig);
      return auth;
    };
    s.open_transport = [this](const http::ClusterAuth&,
                              const std::string& session_dir) -> std::unique_ptr<http::HttpTransport> {
      ++transports_opened;
      tls_session_dirs.push_back(session_dir);
      return std::make_unique<ForwardingTransport>(http);
    };
    s.sleeper = sleeper;
    s.clock = clock;
    s.files = files;
    s.file_writer = file_writer;
    s.list_pod_resources = [this](const std::string& socket, std::chrono::milliseconds timeout) {
      ++kubelet_calls;
      if (!pod_resources)
        throw kubelet::GrpcError(kubelet::GrpcFailure::Unreachable, "connect " + socket + ": refused");
      return pod_resources(socket, timeout);
    };
    s.environment = {"PATH=/usr/sbin:/usr/bin", "CNI_COMMAND=BOGUS", "CNI_IFNAME=bogus0", "HOME=/root"};
    return s;
  }

  /// Runs one verb through the dispatcher.
  cni::DispatchOutput run(const std::string& command, const Json& config, Env env = {}) {
    std::map<std::string, std::string> e;
    e["CNI_COMMAND"] = command;
    if (!env.container_id.empty()) e["CNI_CONTAINERID"] = env.container_id;
    if (!env.ifname.empty()) e["CNI_IFNAME"] = env.ifname;
    std::string netns = env.netns.value_or(netns_path);
    if (!netns.empty()) e["CNI_NETNS"] = netns;
    if (!env.args.empty()) e["CNI_ARGS"] = env.args;
    if (!env.path.empty()) e["CNI_PATH"] = env.path;
    plugin::Commands commands(services());
    return cni::dispatch(e, config.dump(), commands);
  }

  /// Every delegate execution so far, oldest first.
  std::vector<Call> calls() const {
    std::vector<Call> out;
    for (const auto& r : runner.requests()) out.push_back(decode(r));
    return out;
  }
  /// Executions from index `from` on.
  std::vector<Call> calls_since(size_t from) const {
    auto all = calls();
    return std::vector<Call>(all.begin() + static_cast<long>(std::min(from, all.size())), all.end());
  }
  /// brief() of every call from index `from` on.
  std::vector<std::string> briefs_since(size_t from = 0) const {
    std::vector<std::string> out;
    for (const auto& c : calls_since(from)) out.push_back(c.brief());
    return out;
  }
  /// Number of executions so far.
  size_t call_count() const { return runner.requests().size(); }
  /// The stdout every execution printed, in the order of calls().
  std::vector<std::string> outputs;

  /// The result a fake plugin of `type` creates for `ifname` in `version`, as the text it prints.
  std::string result_text(const std::string& type, const std::string& version, const std::string& ifname,
                          const std::string& netns) const {
    Json itf = {{"name", ifname}, {"mac", mac_for(ifname)}, {"sandbox", netns}};
    Json ip = Json::object();
    bool old = version.rfind("0.", 0) == 0;
    if (old) ip["version"] = "4";
    ip["address"] = address_for(type, ifname);
    ip["gateway"] = subnets.at(type) + "1";
    ip["interface"] = 0;
    Json r = {{"cniVersion", version},
              {"interfaces", Json::array({itf})},
              {"ips", Json::array({ip})},
              {"routes", Json::array({Json{{"dst", "0.0.0.0/0"}, {"gw", subnets.at(type) + "1"}}})},
              {"dns", {{"nameservers", Json::array({"10.96.0.10"})}}}};
    return r.dump(2) + "\n";
  }
  /// A small number per interface name: 0 for eth0, N for netN, 20+10K+N for ethK-N, 20+10K for
  /// ethK (K > 0), 89 for anything else.
  static int ifname_number(const std::string& ifname) {
    auto digits = [](const std::string& s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (ifname.rfind("net", 0) == 0 && digits(ifname.substr(3))) return std::stoi(ifname.substr(3));
    if (ifname.rfind("eth", 0) == 0) {
      std::string rest = ifname.substr(3);
      size_t dash = rest.find('-');
      std::string k = rest.substr(0, dash), n = dash == std::string::npos ? "0" : rest.substr(dash + 1);
      if (digits(k) && digits(n))
        return std::stoi(k) == 0 && dash == std::string::npos ? 0 : 20 + 10 * std::stoi(k) + std::stoi(n);
    }
    return 89;
  }
  /// The address a fake plugin of `type` hands out on `ifname`: host 10 + ifname_number(ifname).
  std::string address_for(const std::string& type, const std::string& ifname) const {
    return subnets.at(type) + std::to_string(10 + ifname_number(ifname)) + "/24";
  }
  /// A deterministic MAC per interface name (last byte: 0x0a + ifname_number(ifname)).
  static std::string mac_for(const std::string& ifname) {
    int n = 0x0a + ifname_number(ifname);
    const char* hex = "0123456789abcdef";
    return std::string("0a:58:00:00:00:") + hex[(n >> 4) & 15] + hex[n & 15];
  }

 private:
  static Call decode(const exec::ProcessRequest& r) {
    Call c;
    c.type = std::filesystem::path(r.path).filename().string();
    c.command = env_value(r.env, "CNI_COMMAND").value_or("");
    c.container_id = env_value(r.env, "CNI_CONTAINERID").value_or("");
    c.ifname = env_value(r.env, "CNI_IFNAME").value_or("");
    c.netns = env_value(r.env, "CNI_NETNS");
    c.args = env_value(r.env, "CNI_ARGS");
    c.cni_path = env_value(r.env, "CNI_PATH").value_or("");
    c.env = r.env;
    c.stdin_data = r.stdin_data;
    return c;
  }

  exec::ProcessResult answer(const exec::ProcessRequest& request) {
    Call c = decode(request);
    exec::ProcessResult r = behave(c);
    outputs.push_back(r.stdout_data);
    return r;
  }

  exec::ProcessResult behave(const Call& c) {
    if (intercept)
      if (auto r = intercept(c)) return *r;
    exec::ProcessResult ok;
    ok.exit_code = 0;
    if (c.command == "DEL") {
      if (c.netns && !c.netns->empty()) ns(*c.netns).remove_link(c.ifname);
      return ok;
    }
    if (c.command != "ADD") return ok;
    Json conf = c.config();
    std::string version = conf.value("cniVersion", std::string("0.1.0"));
    if (echo_plugins.count(c.type)) {
      Json prev = conf.value("prevResult", Json());
      if (!prev.is_object()) return cni_error_answer(7, c.type + ": no prevResult");
      prev["cniVersion"] = version;
      ok.stdout_data = prev.dump();
      return ok;
    }
    if (!subnets.count(c.type)) return cni_error_answer(7, c.type + ": unknown fake plugin");
    std::string netns = c.netns.value_or("");
    ok.stdout_data = result_text(c.type, version, c.ifname, netns);
    if (!netns.empty() && !has_link(netns, c.ifname)) {
      int index = ns(netns).add_link(c.ifname);
      ns(netns).add_address(index, address_for(c.type, c.ifname));
    }
    return ok;
  }

  std::map<std::string, std::shared_ptr<netlink::FakeNetnsState>> namespaces_;
};

}  // namespace manifold::test
