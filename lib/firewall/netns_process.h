// Running one helper binary (iptables-save / iptables-restore) inside a network namespace. The
// parent opens the namespace file and checks it is nsfs; util::run_child (the one child launcher)
// forks, enters the namespace with setns(CLONE_NEWNET) in the child, connects stdio and execs the
// absolute path with an explicit environment (no PATH lookup); the parent feeds stdin, collects
// stdout and stderr with size caps, and kills the child's process group when the deadline passes
// or stdout exceeds its cap. Every fd and the child itself are owned by RAII types, so no path
// leaks a descriptor or a zombie.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace manifold::firewall {

/// What to run.
struct ProcessSpec {
  std::string binary;                         ///< absolute path of the executable
  std::vector<std::string> args;              ///< arguments after argv[0] (argv[0] is `binary`)
  std::vector<std::string> env;               ///< the complete environment, "KEY=value" each
  std::string stdin_data;                     ///< written to the child's stdin, then EOF
  std::string netns_path;                     ///< network namespace to enter; empty = stay in ours
  std::chrono::milliseconds timeout{60000};   ///< the child is killed after this long
  std::size_t max_stdout = 16 * 1024 * 1024;  ///< more stdout than this is an error
  std::size_t max_stderr = 64 * 1024;         ///< stderr beyond this is dropped
};

/// How it ended.
struct ProcessOutput {
  int exit_code = -1;   ///< exit status, or -1 when killed by a signal
  int term_signal = 0;  ///< the signal that killed it, or 0
  std::string out;      ///< everything it wrote to stdout
  std::string err;      ///< what it wrote to stderr (up to max_stderr)

  /// True for a normal exit with status 0.
  bool ok() const { return exit_code == 0; }
};

/// Runs `spec` and waits for it. Throws CniError(Firewall) when the namespace cannot be opened or
/// entered, the process cannot be started or exec'd, it exceeds the deadline, or its stdout exceeds
/// the cap. A non-zero exit is not an error here: the caller reads `exit_code` and `err`.
ProcessOutput run_process(const ProcessSpec& spec);

}  // namespace manifold::firewall
