// manifold's entry point and composition root. With CNI_COMMAND set it is a CNI plugin: it builds
// the real side effects (processes, the file cache, netlink, iptables, the file system, the
// Kubernetes API over HTTPS, time), reads the config from stdin (bounded), hands both to the
// dispatcher and prints what it returns. Without it, it is a command for people, parsed with CLI11.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <string_view>

#include "cni/skel.h"
#include "exec/process.h"
#include "plugin/cli/cli.h"
#include "plugin/cni/real_services.h"
#include "plugin/cni/verbs.h"
#include "util/unique_fd.h"

extern char** environ;

namespace {

using namespace manifold;

std::map<std::string, std::string> environment_map() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// Reads stdin up to one byte past the limit, so the dispatcher can reject oversized configs.
std::string read_stdin_bounded() {
  std::string data;
  char buf[65536];
  while (data.size() <= cni::kMaxStdinBytes) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

void write_stdout(const std::string& text) { (void)manifold::util::write_all(STDOUT_FILENO, text); }

// CNI mode: CNI_COMMAND is set, or we were started without arguments in a CNI_* environment (a
// runtime that forgot CNI_COMMAND gets a CNI error, not a usage message).
bool cni_mode(int argc) {
  if (std::getenv("CNI_COMMAND") != nullptr) return true;
  if (argc > 1) return false;
  for (char** e = environ; e && *e; ++e)
    if (std::string_view(*e).starts_with("CNI_")) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!cni_mode(argc)) return plugin::run_cli(argc, argv);
  auto env = environment_map();
  std::string input = read_stdin_bounded();
  exec::RealProcessRunner runner;
  plugin::Commands commands(plugin::real_services(runner));
  auto out = cni::dispatch(env, input, commands);
  write_stdout(out.stdout_text);
  return out.exit_code;
}
