// RealProcessRunner and FakeProcessRunner. The real runner is util::run_child (the one child
// launcher: new process group, default signals, fresh stdio pipes and nothing else inherited, one
// poll loop for stdin and both outputs, group kill on timeout, always reaped) with both outputs
// capped at max_output and ETXTBSY retried; this file maps its outcome to the shell-style
// ProcessResult and its failures to CniError(Internal).
#include "exec/process.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "cni/error.h"
#include "util/child_process.h"

namespace manifold::exec {

namespace {

ProcessResult exec_failure(const std::string& path, int err) {
  ProcessResult r;
  r.exec_errno = err;
  r.exit_code = err == ENOENT ? 127 : 126;
  r.stderr_data = "exec " + path + ": " + std::strerror(err);
  return r;
}

util::ChildSpec child_spec(const ProcessRequest& request) {
  util::ChildSpec spec;
  spec.path = request.path;
  spec.argv = request.argv;
  spec.env = request.env;
  spec.stdin_data = request.stdin_data;
  spec.timeout = request.timeout;
  spec.exit_grace = request.exit_grace;
  spec.max_stdout = spec.max_stderr = request.max_output;
  spec.text_busy_retries = RealProcessRunner::kTextBusyRetries;
  spec.text_busy_backoff = RealProcessRunner::kTextBusyBackoff;
  return spec;
}

}  // namespace

RealProcessRunner::RealProcessRunner() : sleeper_(own_sleeper_) {}

RealProcessRunner::RealProcessRunner(util::Sleeper& sleeper, bool use_pidfd)
    : sleeper_(sleeper), use_pidfd_(use_pidfd) {}

ProcessResult RealProcessRunner::run(const ProcessRequest& request) {
  util::ChildSpec spec = child_spec(request);
  spec.use_pidfd = use_pidfd_;
  util::ChildResult child;
  try {
    child = util::run_child(spec, sleeper_);
  } catch (const util::ChildError& e) {
    throw cni::CniError(cni::ErrorCode::Internal, e.what());
  }
  if (child.failed_step != util::ChildStep::None) return exec_failure(request.path, child.start_errno);
  ProcessResult result;
  result.exit_code = child.exit_code;
  result.term_signal = child.term_signal;
  result.timed_out = child.timed_out;
  result.output_truncated = child.output_truncated;
  result.stdout_data = std::move(child.stdout_data);
  result.stderr_data = std::move(child.stderr_data);
  return result;
}

void FakeProcessRunner::push_result(ProcessResult result) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(result));
}

void FakeProcessRunner::set_handler(Handler handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

std::vector<ProcessRequest> FakeProcessRunner::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

ProcessResult FakeProcessRunner::run(const ProcessRequest& request) {
  Handler handler;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
    if (!queue_.empty()) {
      ProcessResult r = std::move(queue_.front());
      queue_.pop_front();
      return r;
    }
    handler = handler_;
  }
  if (!handler) {
    throw cni::CniError(cni::ErrorCode::Internal, "FakeProcessRunner: no scripted result for " + request.path);
  }
  return handler(request);
}

}  // namespace manifold::exec
