// run_process (see netns_process.h): opens and checks the namespace file, then runs the binary with
// util::run_child (setns in the child before execve) and turns every way it can fail into
// CniError(Firewall) naming the binary.
#include "firewall/netns_process.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>

#include "cni/error.h"
#include "util/child_process.h"
#include "util/unique_fd.h"

namespace manifold::firewall {

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw cni::CniError(cni::ErrorCode::Firewall, what + ": " + std::strerror(err));
}

[[noreturn]] void fail(const std::string& message) { throw cni::CniError(cni::ErrorCode::Firewall, message); }

util::UniqueFd open_netns(const std::string& path) {
  if (path.empty()) return {};
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) fail("open network namespace " + path, errno);
  struct statfs fs {};
  if (::fstatfs(fd.get(), &fs) != 0) fail("statfs network namespace " + path, errno);
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) fail("not a network namespace: " + path);
  return fd;
}

util::ChildSpec child_spec(const ProcessSpec& spec, int netns_fd) {
  util::ChildSpec child;
  child.path = spec.binary;
  child.argv = {spec.binary};
  child.argv.insert(child.argv.end(), spec.args.begin(), spec.args.end());
  child.env = spec.env;
  child.stdin_data = spec.stdin_data;
  child.netns_fd = netns_fd;
  child.timeout = spec.timeout;
  child.max_stdout = spec.max_stdout;
  child.max_stderr = spec.max_stderr;
  child.kill_on_stdout_overflow = true;
  return child;
}

}  // namespace

ProcessOutput run_process(const ProcessSpec& spec) {
  if (spec.binary.empty() || spec.binary.front() != '/')
    throw cni::CniError(cni::ErrorCode::Internal, "run_process needs an absolute path, got \"" + spec.binary + "\"");
  const util::UniqueFd netns = open_netns(spec.netns_path);
  util::ChildResult r;
  try {
    r = util::run_child(child_spec(spec, netns.get()));
  } catch (const util::ChildError& e) {
    fail(e.what());
  }
  switch (r.failed_step) {
    case util::ChildStep::None:
      break;
    case util::ChildStep::Fork:
      fail("fork " + spec.binary, r.start_errno);
    case util::ChildStep::Netns:
      fail("enter network namespace " + spec.netns_path + " for " + spec.binary, r.start_errno);
    case util::ChildStep::Stdio:
      fail("set up stdio for " + spec.binary, r.start_errno);
    case util::ChildStep::Exec:
      fail("execute " + spec.binary, r.start_errno);
  }
  if (r.timed_out)
    fail(spec.binary + " did not finish within " + std::to_string(spec.timeout.count()) + " ms and was killed");
  if (r.killed_for_output)
    fail(spec.binary + " wrote more than " + std::to_string(spec.max_stdout) + " bytes and was killed");
  ProcessOutput out;
  out.exit_code = r.exit_code;
  out.term_signal = r.term_signal;
  out.out = std::move(r.stdout_data);
  out.err = std::move(r.stderr_data);
  return out;
}

}  // namespace manifold::firewall
