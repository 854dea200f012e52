// Implementation of the integration fixtures: namespace creation/removal through `ip netns`, and
// popen-based command execution inside the namespace (deliberately not our own run_process, so the
// tests observe the kernel state independently of the code under test).
#include "netns_fixture.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

namespace manifold::firewall::itest {

namespace {

std::atomic<int> g_counter{0};

CommandResult shell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) result.out.append(buf, n);
  const int status = ::pclose(pipe);
  result.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string binary(Family family, Backend backend, const char* verb) {
  return std::string(family == Family::V4 ? "iptables-" : "ip6tables-") + std::string(backend_name(backend)) + "-" +
         verb;
}

}  // namespace

TestNetns::TestNetns() : name_("mffw-" + std::to_string(::getpid()) + "-" + std::to_string(++g_counter)) {
  if (::geteuid() != 0) {
    why_ = "not root";
    return;
  }
  const CommandResult add = shell("ip netns add " + name_);
  if (add.rc != 0) {
    why_ = "ip netns add failed: " + add.out;
    return;
  }
  ready_ = true;
}

TestNetns::~TestNetns() {
  if (ready_) shell("ip netns del " + name_);
}

CommandResult TestNetns::run(const std::string& command) const {
  return shell("ip netns exec " + name_ + " " + command);
}

bool TestNetns::usable(Family family, Backend backend) const {
  if (!ready_) return false;
  if (!runner().available(family, backend)) return false;
  return run(binary(family, backend, "save") + " -t nat").rc == 0;
}

std::string TestNetns::nat_rules(Family family, Backend backend) const {
  const CommandResult r = run(binary(family, backend, "save") + " -t nat");
  std::string out;
  std::size_t start = 0;
  while (start < r.out.size()) {
    std::size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    const std::string line = r.out.substr(start, end - start);
    if (!line.empty() && line[0] != '#') out += line + "\n";
    start = end + 1;
  }
  return out;
}

CommandResult TestNetns::load(Family family, Backend backend, const std::string& payload) const {
  const std::string file = "/tmp/" + name_ + "-payload";
  std::ofstream(file) << payload;
  const CommandResult r = run(binary(family, backend, "restore") + " --noflush < " + file);
  std::remove(file.c_str());
  return r;
}

RealIptablesRunner TestNetns::runner(int lock_wait_seconds) const {
  RealIptablesRunner::Options options;
  options.netns_path = path();
  options.lock_wait_seconds = lock_wait_seconds;
  return RealIptablesRunner(options);
}

std::string CountingRunner::save(Family family, Backend backend, Table table) {
  ++saves;
  return inner_.save(family, backend, table);
}

void CountingRunner::restore(Family family, Backend backend, const std::string& payload) {
  ++restores;
  inner_.restore(family, backend, payload);
}

}  // namespace manifold::firewall::itest
