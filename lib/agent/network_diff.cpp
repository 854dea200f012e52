// Implementation of the hot-plug diff: explicit names first, then unnamed elements in order, then
// names for what is left.
#include "agent/network_diff.h"

#include <optional>
#include <set>

#include "cni/error.h"
#include "engine/attachment.h"

namespace manifold::agent {

namespace {

/// Key order must not make two equal requests differ: compare as unordered JSON.
bool same_request(const Json& a, const Json& b) {
  return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
}

std::string nad_of(const Json& selection) {
  return selection.value("namespace", std::string()) + "/" + selection.value("name", std::string());
}

bool named(const Json& selection) { return selection.contains("interface"); }

}  // namespace

const Json& recorded_selection(const store::AttachmentRecord& attachment) {
  static const Json null_json;
  if (attachment.cluster_network) return null_json;
  auto it = attachment.extra.find("selection");
  if (it == attachment.extra.end() || !it->is_object()) return null_json;
  return *it;
}

namespace {

/// Matches elements to attachments (see the header): the attachment each element keeps, if any.
std::vector<std::optional<std::size_t>> match_elements(const std::vector<k8s::SelectionElement>& desired,
                                                       const std::vector<store::AttachmentRecord>& attachments) {
  std::vector<bool> taken(attachments.size(), false);
  std::vector<std::optional<std::size_t>> match(desired.size());
  // 1. Elements with an interface name: the attachment of the same NAD on that name.
  // 2. Elements without: the first unmatched attachment of the same NAD made by an unnamed element.
  for (bool with_name : {true, false}) {
    for (std::size_t e = 0; e < desired.size(); ++e) {
      if (desired[e].interface.empty() == with_name) continue;
      const std::string nad = desired[e].namespace_ + "/" + desired[e].name;
      for (std::size_t i = 0; i < attachments.size(); ++i) {
        const Json& sel = recorded_selection(attachments[i]);
        // An attachment without a result is a hot-plug the agent did not finish: never matched,
        // so it is detached (its DEL releases whatever the delegate got to) and attached again.
        if (taken[i] || sel.is_null() || attachments[i].result.empty() || nad_of(sel) != nad) continue;
        if (with_name ? attachments[i].ifname != desired[e].interface : named(sel)) continue;
        taken[i] = true;
        match[e] = i;
        break;
      }
    }
  }
  return match;
}

}  // namespace

NetworkDiff diff_networks(const std::vector<k8s::SelectionElement>& desired, const store::ContainerRecord& record) {
  const auto& attachments = record.attachments;
  std::vector<std::optional<std::size_t>> match = match_elements(desired, attachments);
  // A matched element asking for something else now is detached and attached again on its name.
  std::vector<std::string> reattach_name(desired.size());
  for (std::size_t e = 0; e < desired.size(); ++e) {
    if (!match[e]) continue;
    const auto& a = attachments[*match[e]];
    if (same_request(recorded_selection(a), k8s::selection_record(desired[e]))) continue;
    reattach_name[e] = a.ifname;
    match[e].reset();
  }
  std::vector<bool> kept(attachments.size(), false);  // still matched: left as it is
  for (const auto& m : match)
    if (m) kept[*m] = true;
  NetworkDiff diff;

  std::set<std::string> taken;
  for (std::size_t i = 0; i < attachments.size(); ++i) {
    if (recorded_selection(attachments[i]).is_null() || kept[i]) {
      taken.insert(attachments[i].ifname);
    } else {
      diff.detach.push_back(i);
    }
  }
  for (std::size_t e = 0; e < desired.size(); ++e) {
    if (!desired[e].interface.empty()) taken.insert(desired[e].interface);
    if (!reattach_name[e].empty()) taken.insert(reattach_name[e]);
  }
  std::size_t next = 1;
  for (std::size_t e = 0; e < desired.size(); ++e) {
    if (match[e]) continue;
    std::string ifname = !desired[e].interface.empty() ? desired[e].interface : reattach_name[e];
    if (ifname.empty()) {
      while (taken.count(engine::secondary_ifname(record.ifname, next)) != 0) ++next;
      ifname = engine::secondary_ifname(record.ifname, next);
    }
    taken.insert(ifname);
    diff.attach.push_back({desired[e], ifname});
  }
  return diff;
}

}  // namespace manifold::agent
