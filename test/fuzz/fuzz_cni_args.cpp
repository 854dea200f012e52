// Fuzz target: CNI_ARGS ("K1=V1;K2=V2"). The input is parsed with CniArgs::parse, looked up
// (pod identity), rendered back, and extended for a delegate with delegate_cni_args (IgnoreUnknown
// plus the IP=/MAC= additions a selection element requests). Checks: parse(str()) gives the same
// pairs, and what we hand to a delegate parses again and carries IgnoreUnknown and the additions.
// The same text also goes through cni::dispatch as the CNI_ARGS variable.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cni/cni_args.h"
#include "cni/skel.h"
#include "fuzz_common.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

struct NoopHandlers final : cni::Handlers {
  std::string add(const cni::Invocation& inv) override { return inv.args.str(); }
  std::string del(const cni::Invocation&) override { return {}; }
  std::string check(const cni::Invocation&) override { return {}; }
  std::string gc(const cni::Invocation&) override { return {}; }
  std::string status(const cni::Invocation&) override { return {}; }
};

void check_delegate_args(const cni::CniArgs& args, const std::vector<std::pair<std::string, std::string>>& extra) {
  const std::string text = cni::delegate_cni_args(args, extra);
  cni::CniArgs again;
  if (!fuzz::accepts([&] { again = cni::CniArgs::parse(text); }))
    fuzz::fuzz_bug("delegate_cni_args produced CNI_ARGS that do not parse: " + text.substr(0, 200));
  if (again.pairs().empty() != (args.pairs().empty() && extra.empty()))
    fuzz::fuzz_bug("delegate_cni_args lost or invented pairs: " + text.substr(0, 200));
  if (!again.pairs().empty() && !again.get("IgnoreUnknown"))
    fuzz::fuzz_bug("delegate_cni_args without IgnoreUnknown: " + text.substr(0, 200));
  for (const auto& [key, value] : extra)
    if (again.get(key) != value) fuzz::fuzz_bug("delegate_cni_args lost " + key + ": " + text.substr(0, 200));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);

  cni::CniArgs args;
  if (fuzz::accepts([&] { args = cni::CniArgs::parse(input); })) {
    (void)cni::pod_ref_from(args);
    (void)args.get("IgnoreUnknown");
    const std::string rendered = args.str();
    cni::CniArgs again;
    if (!fuzz::accepts([&] { again = cni::CniArgs::parse(rendered); }) || again.pairs() != args.pairs())
      fuzz::fuzz_bug("CniArgs::str() does not parse back to the same pairs: " + rendered.substr(0, 200));
    check_delegate_args(args, {});
    check_delegate_args(args, {{"IP", "10.1.1.5/24,fd00::5/64"}, {"MAC", "0a:58:0a:01:01:05"}});
    // A key of the input replaced by an addition keeps its first position.
    if (!args.pairs().empty()) check_delegate_args(args, {{args.pairs().front().first, "replaced"}});
  }

  std::map<std::string, std::string> env = {{"CNI_COMMAND", "ADD"},        {"CNI_CONTAINERID", "c0ffee"},
                                            {"CNI_NETNS", "/run/netns/x"}, {"CNI_IFNAME", "eth0"},
                                            {"CNI_PATH", "/opt/cni/bin"},  {"CNI_ARGS", std::string(input)}};
  NoopHandlers handlers;
  cni::DispatchOutput out = cni::dispatch(env, R"({"cniVersion":"1.0.0","name":"n","type":"manifold"})", handlers);
  if (out.exit_code != 0) {
    Json error = fuzz::must_parse(out.stdout_text, "dispatch error");
    if (error.value("code", 0) != static_cast<int>(cni::ErrorCode::InvalidEnv))
      fuzz::fuzz_bug("CNI_ARGS rejected with an unexpected error: " + out.stdout_text);
  }
  return 0;
}
