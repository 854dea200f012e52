// Fuzz target: the network config the runtime writes to stdin. The input goes through
// cni::dispatch for every verb with a fixed, valid environment; the Handlers fake does what the
// real verbs do with the config before any side effect: parse_meta_config, prepare every delegate
// (runtimeConfig injection, cniVersion default), build conflist plugin stdins, splice prevResult
// into the prepared bytes and merge the `mesh` scoping layers. Checks: dispatch's output is the
// handler's answer or a well-formed CNI error JSON, never an "internal error" (which is what the
// dispatcher turns a non-CniError exception into), and prevResult splicing yields valid JSON.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "cni/delegate_config.h"
#include "cni/netconf.h"
#include "cni/skel.h"
#include "scoping/mesh_config.h"
#include "fuzz_common.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

constexpr const char* kAnswer = "{\"cniVersion\":\"1.0.0\"}";
constexpr const char* kPrevResult = R"({"cniVersion":"1.0.0","ips":[{"address":"10.1.2.3/24"}]})";

/// prevResult spliced into `conf_text` must give JSON whose prevResult is the one given.
void check_splice(const std::string& conf_text) {
  std::string spliced;
  if (!fuzz::accepts([&] { spliced = cni::with_prev_result(conf_text, kPrevResult); })) return;
  Json j = fuzz::must_parse(spliced, "with_prev_result");
  if (!j.is_object() || !j.contains("prevResult") || j["prevResult"] != Json::parse(kPrevResult))
    fuzz::fuzz_bug("with_prev_result lost or changed prevResult: " + spliced.substr(0, 200));
}

std::string handle(const cni::Invocation& inv) {
  try {
    cni::MetaConfig m = cni::parse_meta_config(inv.config);
    (void)cni::pod_ref_from(inv.args);
    const Json top_mesh = m.scoping.contains("mesh") ? m.scoping["mesh"] : Json();
    for (const Json& delegate : m.delegates) {
      cni::validate_delegate_shape(delegate, "delegate");
      Json prepared = cni::prepare_delegate(delegate, m.runtime_config, m.cni_version);
      const std::string text = prepared.dump();
      const std::string name = cni::delegate_name(prepared);
      const std::string version = cni::delegate_version(prepared);
      (void)cni::version_at_least(version, 0, 4);
      if (cni::is_conflist(prepared)) {
        for (const Json& plugin : prepared["plugins"])
          fuzz::must_parse(cni::chain_plugin_stdin(plugin, name, version, Json::parse(kPrevResult)),
                           "chain_plugin_stdin");
      } else {
        check_splice(text);
      }
      auto mesh = delegate.find("mesh");
      fuzz::accepts(
          [&] { (void)scoping::merge_mesh_layers(top_mesh, mesh == delegate.end() ? Json() : *mesh, Json()); });
    }
    check_splice(inv.stdin_data);
    return kAnswer;
  } catch (const cni::CniError&) {
    throw;
  } catch (const std::exception& e) {
    fuzz::fuzz_bug(std::string("handler: non-CniError exception: ") + e.what());
  }
}

struct ParsingHandlers final : cni::Handlers {
  std::string add(const cni::Invocation& inv) override { return handle(inv); }
  std::string del(const cni::Invocation& inv) override { return handle(inv); }
  std::string check(const cni::Invocation& inv) override { return handle(inv); }
  std::string gc(const cni::Invocation& inv) override { return handle(inv); }
  std::string status(const cni::Invocation& inv) override { return handle(inv); }
};

std::map<std::string, std::string> env_for(const char* command) {
  return {{"CNI_COMMAND", command},
          {"CNI_CONTAINERID", "3f0a9c5e1b2d4f6a8c0e2a4c6e8a0c2e4a6c8e0a2c4e6a8c0e2a4c6e8a0c2e4a"},
          {"CNI_NETNS", "/var/run/netns/cni-1234"},
          {"CNI_IFNAME", "eth0"},
          {"CNI_PATH", "/opt/cni/bin:/usr/lib/cni"},
          {"CNI_ARGS",
           "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
           "K8S_POD_INFRA_CONTAINER_ID=3f0a9c5e;K8S_POD_UID=0b4c8f5e-1d2a-4c3b-9e8f-7a6b5c4d3e2f"}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  ParsingHandlers handlers;
  for (const char* command : {"ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"}) {
    cni::DispatchOutput out = cni::dispatch(env_for(command), input, handlers);
    if (out.exit_code == 0) {
      if (std::string_view(command) == "VERSION") {
        Json v = fuzz::must_parse(out.stdout_text, "VERSION");
        if (!v.is_object() || !v.contains("supportedVersions")) fuzz::fuzz_bug("VERSION answer without versions");
      } else if (out.stdout_text != kAnswer) {
        fuzz::fuzz_bug("dispatch changed the handler's answer: " + out.stdout_text);
      }
      continue;
    }
    Json error = fuzz::must_parse(out.stdout_text, "dispatch error");
    if (out.exit_code != 1 || !error.is_object() || !error.contains("code") || !error["msg"].is_string())
      fuzz::fuzz_bug("malformed error output: " + out.stdout_text);
    if (error["msg"].get<std::string>().rfind("internal error: ", 0) == 0)
      fuzz::fuzz_bug(std::string(command) + ": non-CniError exception in dispatch: " + out.stdout_text);
  }
  return 0;
}
