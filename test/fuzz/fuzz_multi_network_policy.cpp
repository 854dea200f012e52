// Fuzz target: a MultiNetworkPolicy object as the API server returns it (an item of the LIST an ADD
// makes). The input is read the way ADD reads it, evaluated for a fixed pod on network
// "default/blue" without peers (ADD's form) and with a fixed set of peers (the agent's), and turned
// into the rule payload of both families and both deny actions, which is then loaded into a
// simulated filter table. The same text is also read as a pod and as a network-status annotation.
// Checks: reading a policy never throws (what does not validate is described in its error and
// reads fail closed: both directions isolated, no rules); a pod or namespace is rejected only with
// PolicyError; evaluation is deterministic; every payload is one *filter ... COMMIT block that
// names only our two chains and the INPUT/OUTPUT jumps to them, with comments that stay inside
// their quotes, and loads.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "firewall/fake_runner.h"
#include "fuzz_common.h"
#include "policy/evaluate.h"
#include "policy/policy_error.h"
#include "policy/rule_builder.h"
#include "util/json_parse.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

Json pod_object(const std::string& ns, const std::string& name, const char* labels, const char* ips) {
  const std::string status = std::string(R"([{"name":"default/blue","interface":"net1","ips":)") + ips + "}]";
  Json pod = {{"metadata",
               {{"name", name},
                {"namespace", ns},
                {"labels", Json::parse(labels)},
                {"annotations", {{"k8s.v1.cni.cncf.io/network-status", status}}}}},
              {"spec", {{"containers", {{{"name", "c"}, {"ports", {{{"name", "http"}, {"containerPort", 8080}}}}}}}}}};
  return pod;
}

const policy::PodView& target() {
  static const policy::PodView pod =
      policy::read_pod_view(pod_object("default", "web", R"({"app":"web"})", R"(["10.1.0.10","2001:db8::10"])"));
  return pod;
}

const policy::PeerWorld& peers() {
  static const policy::PeerWorld world = [] {
    policy::PeerWorld w;
    w.pods.push_back(policy::read_pod_view(pod_object("default", "a", R"({"role":"client"})", R"(["10.1.0.5"])")));
    w.pods.push_back(policy::read_pod_view(pod_object("team", "b", R"({"role":"client"})", R"(["2001:db8::7"])")));
    w.namespaces = {{"default", {}}, {"team", {{"team", "a"}}}};
    return w;
  }();
  return world;
}

void check_payload(const std::string& payload) {
  const std::vector<std::string> names = policy::policy_chain_names("net1");
  std::size_t start = 0;
  std::vector<std::string> lines;
  while (start < payload.size()) {
    const std::size_t end = payload.find('\n', start);
    if (end == std::string::npos) fuzz::fuzz_bug("payload does not end with a newline");
    lines.push_back(payload.substr(start, end - start));
    start = end + 1;
  }
  if (lines.size() < 2 || lines.front() != "*filter" || lines.back() != "COMMIT")
    fuzz::fuzz_bug("payload is not one *filter ... COMMIT block");
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::string& line = lines[i];
    const bool ours = line.rfind(":" + names[0] + " ", 0) == 0 || line.rfind(":" + names[1] + " ", 0) == 0 ||
                      line.rfind("-A " + names[0] + " ", 0) == 0 || line.rfind("-A " + names[1] + " ", 0) == 0 ||
                      line == "-I INPUT 1 -i net1 -m comment --comment \"mnp/net1/ingress\" -j " + names[0] ||
                      line == "-I OUTPUT 1 -o net1 -m comment --comment \"mnp/net1/egress\" -j " + names[1];
    if (!ours) fuzz::fuzz_bug("payload line outside our chains: " + line);
    std::size_t quotes = 0;
    for (char c : line) quotes += c == '"' ? 1 : 0;
    if (quotes != 0 && quotes != 2) fuzz::fuzz_bug("a comment escapes its quotes: " + line);
    if (line.find('\0') != std::string::npos || line.find('\r') != std::string::npos)
      fuzz::fuzz_bug("payload line holds a control character");
  }
  firewall::SavedTable table = firewall::empty_table(firewall::Table::Filter);
  firewall::apply_restore_payload(table, payload);  // a CniError here means a payload that does not load
}

void check_policy(const Json& object) {
  const policy::MultiNetworkPolicy p = policy::read_policy(object, "default");
  if (!p.valid() && (!p.ingress || !p.egress || !p.ingress_rules.empty() || !p.egress_rules.empty()))
    fuzz::fuzz_bug("an invalid policy does not read fail-closed: " + p.error);
  if (p.valid() && !p.pod_selector) fuzz::fuzz_bug("a valid policy without a pod selector");
  const std::vector<policy::MultiNetworkPolicy> policies{p};
  for (const policy::PeerWorld* world : {static_cast<const policy::PeerWorld*>(nullptr), &peers()}) {
    const policy::AttachmentRules rules = policy::evaluate(target(), "default/blue", policies, world);
    if (!(policy::evaluate(target(), "default/blue", policies, world) == rules))
      fuzz::fuzz_bug("evaluation is not deterministic");
    if (!p.valid() && rules.covered() && (!rules.ingress.allows.empty() || !rules.egress.allows.empty()))
      fuzz::fuzz_bug("an invalid policy allows something");
    for (auto family : {firewall::Family::V4, firewall::Family::V6})
      for (auto deny : {policy::DenyAction::Drop, policy::DenyAction::Reject})
        check_payload(policy::build_policy_payload("net1", rules, family, deny, ""));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kQuiet;
  const std::string text(fuzz::as_text(data, size));
  const Json doc = util::parse_json_bounded(text, 64);
  (void)policy::read_network_status_ips(text);
  if (doc.is_discarded()) return 0;
  check_policy(doc);
  try {
    (void)policy::read_pod_view(doc);
    (void)policy::read_namespace(doc);
  } catch (const policy::PolicyError&) {}
  return 0;
}
