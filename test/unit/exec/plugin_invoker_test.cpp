// Tests for lib/exec/plugin_invoker: the CNI environment builder, the mapping of delegate outcomes
// onto results and CniErrors (error JSON passed through with its own code, garbage and crashes as
// 101 with a bounded stderr tail, timeouts, missing binaries), stderr logging, and two end-to-end
// runs of real script plugins.
#include "exec/plugin_invoker.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cni/error.h"
#include "log_capture.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using manifold::Json;
using manifold::cni::CniError;
using manifold::exec::FakeProcessRunner;
using manifold::exec::plugin_environment;
using manifold::exec::PluginCall;
using manifold::exec::PluginInvoker;
using manifold::exec::ProcessRequest;
using manifold::exec::ProcessResult;
using manifold::exec::RealProcessRunner;
using namespace std::chrono_literals;
using manifold::test::LogCapture;
using manifold::test::TempDir;

namespace {

PluginCall add_call() {
  PluginCall call;
  call.command = "ADD";
  call.container_id = "abc123";
  call.netns = "/var/run/netns/x";
  call.ifname = "net1";
  call.cni_args = "IgnoreUnknown=1;K8S_POD_NAME=p";
  call.cni_path = "/opt/cni/bin";
  call.config = R"({"cniVersion":"1.0.0","name":"n","type":"bridge"})";
  return call;
}

ProcessResult exited(int code, std::string out, std::string err = "") {
  ProcessResult r;
  r.exit_code = code;
  r.stdout_data = std::move(out);
  r.stderr_data = std::move(err);
  return r;
}

CniError invoke_error(PluginInvoker& invoker, const std::string& type = "bridge") {
  try {
    invoker.invoke(type, add_call());
  } catch (const CniError& e) {
    return e;
  }
  FAIL("invoke did not throw");
  return CniError(0u, "");
}

/// A bin dir with a (never really run) "bridge" file plus a fake runner and an invoker over them.
struct Fixture {
  TempDir bin;
  FakeProcessRunner runner;
  PluginInvoker invoker{runner, {bin.str()}, 1500ms, {"PATH=/usr/bin", "CNI_COMMAND=DEL", "HOME=/root"}};
  Fixture() { bin.script("bridge", "exit 99"); }
};

}  // namespace

TEST_CASE("plugin env: CNI_* of the base are replaced by the call's", "[exec]") {
  std::vector<std::string> base = {"PATH=/bin", "CNI_COMMAND=DEL", "CNI_NETNS=/old", "CNI_FOO=x", "TZ=UTC"};
  CHECK(plugin_environment(base, add_call()) ==
        std::vector<std::string>{"PATH=/bin", "TZ=UTC", "CNI_COMMAND=ADD", "CNI_CONTAINERID=abc123",
                                 "CNI_NETNS=/var/run/netns/x", "CNI_IFNAME=net1",
                                 "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=p", "CNI_PATH=/opt/cni/bin"});
}

TEST_CASE("plugin env: empty optional values are omitted, COMMAND and PATH always set", "[exec]") {
  PluginCall call;
  call.command = "VERSION";
  CHECK(plugin_environment({}, call) == std::vector<std::string>{"CNI_COMMAND=VERSION", "CNI_PATH="});
}

TEST_CASE("plugin env: duplicates keep the first position and the last value, junk is dropped", "[exec]") {
  PluginCall call;
  call.command = "DEL";
  call.cni_path = "/p";
  std::vector<std::string> base = {"PATH=1", "TZ=2", "PATH=3", "noequals", "=novalue", "LANG=x=y", "LC_ALL="};
  CHECK(plugin_environment(base, call) ==
        std::vector<std::string>{"PATH=3", "TZ=2", "LANG=x=y", "LC_ALL=", "CNI_COMMAND=DEL", "CNI_PATH=/p"});
}

TEST_CASE("plugin env: only the allow-list of the runtime's variables reaches a delegate", "[exec]") {
  for (const char* name :
       {"PATH", "LD_LIBRARY_PATH", "TMPDIR", "XTABLES_LOCKFILE", "TZ", "LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES"}) {
    CAPTURE(name);
    CHECK(manifold::exec::passes_to_delegate(name));
  }
  for (const char* name :
       {"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "HOME", "LD_PRELOAD", "LD_AUDIT", "HTTPS_PROXY", "https_proxy",
        "ASAN_OPTIONS", "MY_TOKEN", "LC_", "LC", "path", "PATH2", "XPATH", "CNI_COMMAND", ""}) {
    CAPTURE(name);
    CHECK_FALSE(manifold::exec::passes_to_delegate(name));
  }
  PluginCall call = add_call();
  std::vector<std::string> base = {"KUBECONFIG=/etc/kubernetes/admin.conf",
                                   "PATH=/usr/bin",
                                   "LD_PRELOAD=/tmp/evil.so",
                                   "SECRET_TOKEN=s3cr3t",
                                   "LC_ALL=C.UTF-8",
                                   "HOME=/root"};
  std::vector<std::string> env = plugin_environment(base, call);
  CHECK(env == std::vector<std::string>{"PATH=/usr/bin", "LC_ALL=C.UTF-8", "CNI_COMMAND=ADD", "CNI_CONTAINERID=abc123",
                                        "CNI_NETNS=/var/run/netns/x", "CNI_IFNAME=net1",
                                        "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=p", "CNI_PATH=/opt/cni/bin"});
}

TEST_CASE("plugin env: delegateEnv names and prefixes widen the allow-list", "[exec]") {
  const std::vector<std::string> extra = {"HTTPS_PROXY", "CORP_*"};
  CHECK(manifold::exec::passes_to_delegate("HTTPS_PROXY", extra));
  CHECK(manifold::exec::passes_to_delegate("CORP_", extra));
  CHECK(manifold::exec::passes_to_delegate("CORP_REGION", extra));
  CHECK_FALSE(manifold::exec::passes_to_delegate("HTTPS_PROXY2", extra));
  CHECK_FALSE(manifold::exec::passes_to_delegate("CORP", extra));
  CHECK_FALSE(manifold::exec::passes_to_delegate("KUBECONFIG", extra));
  std::vector<std::string> base = {"HTTPS_PROXY=http://proxy:3128", "CORP_REGION=eu", "KUBECONFIG=/k", "PATH=/usr/bin"};
  std::vector<std::string> env = plugin_environment(base, add_call(), extra);
  CHECK(env == std::vector<std::string>{"HTTPS_PROXY=http://proxy:3128", "CORP_REGION=eu", "PATH=/usr/bin",
                                        "CNI_COMMAND=ADD", "CNI_CONTAINERID=abc123", "CNI_NETNS=/var/run/netns/x",
                                        "CNI_IFNAME=net1", "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=p",
                                        "CNI_PATH=/opt/cni/bin"});
}

TEST_CASE("invoker: success returns stdout and sends the right request", "[exec]") {
  Fixture f;
  f.runner.push_result(exited(0, R"({"cniVersion":"1.0.0"})"));
  CHECK(f.invoker.invoke("bridge", add_call()) == R"({"cniVersion":"1.0.0"})");
  auto reqs = f.runner.requests();
  REQUIRE(reqs.size() == 1);
  std::string path = (fs::path(f.bin.str()) / "bridge").string();
  CHECK(reqs[0].path == path);
  CHECK(reqs[0].argv == std::vector<std::string>{path});
  CHECK(reqs[0].stdin_data == add_call().config);
  CHECK(reqs[0].timeout == 1500ms);
  CHECK(reqs[0].env == plugin_environment({"PATH=/usr/bin", "CNI_COMMAND=DEL", "HOME=/root"}, add_call()));
}

TEST_CASE("invoker: exit 0 with empty stdout is fine", "[exec]") {
  Fixture f;
  f.runner.push_result(exited(0, ""));
  PluginCall call = add_call();
  call.command = "DEL";
  CHECK(f.invoker.invoke("bridge", call).empty());
}

TEST_CASE("invoker: a delegate's CNI error JSON is passed through unchanged", "[exec]") {
  Fixture f;
  for (unsigned code : {7u, 11u, 3u, 999u}) {
    CAPTURE(code);
    Json err = {{"cniVersion", "1.0.0"}, {"code", code}, {"msg", "delegate says no"}, {"details", "because"}};
    f.runner.push_result(exited(1, err.dump() + "\n", "some log\n"));
    CniError e = invoke_error(f.invoker);
    CHECK(e.code() == code);
    CHECK(e.msg() == "delegate says no");
    CHECK(e.details() == "because");
  }
}

TEST_CASE("invoker: error JSON without msg still names the plugin", "[exec]") {
  Fixture f;
  f.runner.push_result(exited(1, R"({"code":11})"));
  CniError e = invoke_error(f.invoker);
  CHECK(e.code() == 11);
  CHECK(e.msg().find("bridge") != std::string::npos);
}

TEST_CASE("invoker: garbage or malformed error output is DelegateFailed", "[exec]") {
  Fixture f;
  for (std::string out : {std::string("not json"), std::string(R"({"code":0,"msg":"x"})"),
                          std::string(R"({"code":"7","msg":"x"})"), std::string(R"({"code":-3,"msg":"x"})"),
                          std::string(R"({"code":7,"msg":5})"), std::string(R"([1,2])"), std::string("")}) {
    CAPTURE(out);
    f.runner.push_result(exited(2, out, "line one\nfatal: it broke\n"));
    CniError e = invoke_error(f.invoker);
    CHECK(e.code() == 101);
    CHECK(e.msg() == "plugin \"bridge\" failed (ADD): exit status 2: line one fatal: it broke");
  }
}

TEST_CASE("invoker: without stderr the tail of stdout is quoted", "[exec]") {
  Fixture f;
  f.runner.push_result(exited(1, "panic: oops\n"));
  CHECK(invoke_error(f.invoker).msg() == "plugin \"bridge\" failed (ADD): exit status 1: panic: oops");
}

TEST_CASE("invoker: the stderr tail is bounded and made valid UTF-8", "[exec]") {
  Fixture f;
  std::string err = std::string(100000, 'a') + "\xff\xfe bad bytes \x01\x02 and the real cause: ENOSPC\n";
  f.runner.push_result(exited(1, "", err));
  CniError e = invoke_error(f.invoker);
  CHECK(e.code() == 101);
  CHECK(e.msg().size() < manifold::exec::kFailureTailBytes + 200);
  CHECK(e.msg().find("and the real cause: ENOSPC") != std::string::npos);
  CHECK(e.msg().find("...") != std::string::npos);
  CHECK_NOTHROW(e.to_json("1.0.0").dump());
}

TEST_CASE("invoker: a signal death names the signal", "[exec]") {
  Fixture f;
  ProcessResult r;
  r.term_signal = SIGSEGV;
  f.runner.push_result(r);
  CniError e = invoke_error(f.invoker);
  CHECK(e.code() == 101);
  CHECK(e.msg() == "plugin \"bridge\" failed (ADD): killed by signal 11 (Segmentation fault)");
}

TEST_CASE("invoker: a timeout says so", "[exec]") {
  Fixture f;
  ProcessResult r;
  r.timed_out = true;
  r.term_signal = SIGKILL;
  f.runner.push_result(r);
  CniError e = invoke_error(f.invoker);
  CHECK(e.code() == 101);
  CHECK(e.msg() == "plugin \"bridge\" timed out after 1500 ms (killed)");
}

TEST_CASE("invoker: an exec failure is DelegateFailed with the errno text", "[exec]") {
  Fixture f;
  ProcessResult r;
  r.exit_code = 126;
  r.exec_errno = EACCES;
  f.runner.push_result(r);
  CniError e = invoke_error(f.invoker);
  CHECK(e.code() == 101);
  CHECK(e.msg().find("failed to run plugin \"bridge\"") != std::string::npos);
  CHECK(e.msg().find("Permission denied") != std::string::npos);
}

TEST_CASE("invoker: truncated stdout on success is DelegateFailed", "[exec]") {
  Fixture f;
  ProcessResult r = exited(0, std::string(16u << 20, 'x'));
  r.output_truncated = true;
  f.runner.push_result(r);
  CHECK(invoke_error(f.invoker).code() == 101);
}

TEST_CASE("invoker: missing plugin, invalid type and NUL in the environment", "[exec]") {
  Fixture f;
  CHECK(invoke_error(f.invoker, "macvlan").code() == 101);
  CHECK(invoke_error(f.invoker, "../bridge").code() == 7);
  PluginCall call = add_call();
  call.cni_args = std::string("K8S_POD_NAME=a\0b", 16);
  try {
    f.invoker.invoke("bridge", call);
    FAIL("accepted");
  } catch (const CniError& e) {
    CHECK(e.code() == 7);
    CHECK(e.msg().find("CNI_ARGS") != std::string::npos);
  }
  CHECK(f.runner.requests().empty());
}

TEST_CASE("invoker: delegate stderr lines go to the log prefixed with the type", "[exec]") {
  Fixture f;
  LogCapture log;
  f.runner.push_result(exited(0, "{}", "first thing\nsecond thing\n"));
  f.invoker.invoke("bridge", add_call());
  CHECK(log.contains("bridge: first thing"));
  CHECK(log.contains("bridge: second thing"));
}

TEST_CASE("invoker: end to end with real script plugins", "[exec]") {
  TempDir bin;
  bin.script("echoer",
             "printf '{\"cmd\":\"%s\",\"ifname\":\"%s\",\"stdin\":' \"$CNI_COMMAND\" "
             "\"$CNI_IFNAME\"; cat; printf '}'");
  bin.script("refuser",
             "echo 'log line' >&2; echo '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"busy\"}'; "
             "exit 1");
  bin.script("crasher", "echo 'boom' >&2; kill -KILL $$");
  RealProcessRunner runner;
  PluginInvoker invoker(runner, {"/nonexistent", bin.str()}, 10s, {"PATH=/usr/bin:/bin"});

  Json out = Json::parse(invoker.invoke("echoer", add_call()));
  CHECK(out["cmd"] == "ADD");
  CHECK(out["ifname"] == "net1");
  CHECK(out["stdin"]["type"] == "bridge");

  CniError busy = invoke_error(invoker, "refuser");
  CHECK(busy.code() == 11);
  CHECK(busy.msg() == "busy");

  CniError crash = invoke_error(invoker, "crasher");
  CHECK(crash.code() == 101);
  CHECK(crash.msg() == "plugin \"crasher\" failed (ADD): killed by signal 9 (Killed): boom");
}
