// Reading the `multiNetworkPolicy` settings with the strict config reader, in throwing or
// collecting mode.
#include "policy/policy_config.h"

#include <array>

namespace manifold::policy {

namespace {

constexpr std::array<std::string_view, 4> kKeys = {"enabled", "iptablesMode", "lockWaitSeconds", "denyAction"};

void read(const cni::ConfigReader& r, PolicyConfig& cfg) {
  r.reject_unknown(kKeys);
  if (auto v = r.read_bool("enabled")) cfg.enabled = *v;
  if (const Json* v = r.get("iptablesMode")) {
    if (*v == "auto") {
      cfg.iptables_mode = firewall::IptablesMode::Auto;
    } else if (*v == "legacy") {
      cfg.iptables_mode = firewall::IptablesMode::Legacy;
    } else if (*v == "nft") {
      cfg.iptables_mode = firewall::IptablesMode::Nft;
    } else {
      r.fail("iptablesMode", r.echo(*v) + " is not one of \"auto\", \"legacy\", \"nft\"");
    }
  }
  if (auto v = r.read_int("lockWaitSeconds", 1, 600)) cfg.lock_wait_seconds = *v;
  if (const Json* v = r.get("denyAction")) {
    if (*v == "drop") {
      cfg.deny = DenyAction::Drop;
    } else if (*v == "reject") {
      cfg.deny = DenyAction::Reject;
    } else {
      r.fail("denyAction", r.echo(*v) + " is not one of \"drop\", \"reject\"");
    }
  }
}

}  // namespace

std::optional<firewall::Backend> PolicyConfig::forced_backend() const {
  if (iptables_mode == firewall::IptablesMode::Legacy) return firewall::Backend::Legacy;
  if (iptables_mode == firewall::IptablesMode::Nft) return firewall::Backend::Nft;
  return std::nullopt;
}

PolicyConfig read_policy_config(const Json& value) {
  PolicyConfig cfg;
  cni::ProblemReport first_error;
  read(cni::ConfigReader(value, "$.multiNetworkPolicy", std::string(kPolicyConfigKey), first_error), cfg);
  return cfg;
}

void validate_policy_config(const Json& value, const std::string& path, cni::Problems& out) {
  PolicyConfig cfg;
  cni::ProblemReport collect(out);
  read(cni::ConfigReader(value, path, std::string(kPolicyConfigKey), collect), cfg);
}

}  // namespace manifold::policy
