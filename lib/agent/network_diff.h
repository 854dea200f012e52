// What a hot-plug changes: the pod's networks annotation (the desired selection elements) compared
// with the attachments a sandbox's cache entry records for that annotation. Elements are matched to
// attachments by NAD namespace/name and interface name; an element without an interface name
// matches, in order, an attachment that an element without an interface name produced — so a
// network attached without an explicit name can still be unplugged. An attachment no element
// matches is detached; an element no attachment matches is attached (on its requested name, or the
// lowest free secondary name); a matched element that asks for anything else now is detached and
// attached again on the same name. An attachment recorded without a result (a hot-plug interrupted by
// the agent's death) matches nothing, so it is detached and its element attached again. The cluster
// network and defaultNetworks are never touched. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "k8s/selection.h"
#include "store/record.h"
#include "util/json.h"

namespace manifold::agent {

/// One network to attach.
struct PlannedAttach {
  k8s::SelectionElement element;  ///< the element asking for it
  std::string ifname;             ///< its interface name in the pod
};

/// The changes that bring a sandbox's attachments in line with the annotation.
struct NetworkDiff {
  /// Indices into the record's attachments to detach, ascending.
  std::vector<std::size_t> detach;
  /// Networks to attach, in annotation order (after the detachments).
  std::vector<PlannedAttach> attach;
  /// True when nothing changes.
  bool empty() const { return detach.empty() && attach.empty(); }
};

/// The selection element an attachment was attached for (its recorded "selection"), null for the
/// cluster network, defaultNetworks and any attachment not made for the networks annotation.
const Json& recorded_selection(const store::AttachmentRecord& attachment);

/// The diff between `desired` (the parsed annotation) and what `record` holds. `cluster_ifname` is
/// the entry's CNI_IFNAME, from which secondary names derive (engine::secondary_ifname). Throws
/// CniError(InvalidConfig) when no free interface name is left.
NetworkDiff diff_networks(const std::vector<k8s::SelectionElement>& desired, const store::ContainerRecord& record);

}  // namespace manifold::agent
