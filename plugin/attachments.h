// Attachment resolution: which networks a CNI ADD attaches, in which order, with which interface
// names. The cluster network comes first (CNI_IFNAME), then defaultNetworks, then the remaining
// inline delegates, each named net<idx> by its position in the whole list unless it asks for a name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cni/netconf.h"
#include "cni/skel.h"
#include "util/json.h"

namespace manifold::plugin {

/// One network to attach, before its delegate is run.
struct Attachment {
  std::string name;                 ///< display/status name (CNI name, or ns/name for NADs)
  std::string ifname;               ///< interface name in the pod
  Json delegate;                    ///< the conf or conflist, not yet prepared
  bool cluster_network = false;     ///< the first attachment, on CNI_IFNAME
  Json runtime_config = Json::object();  ///< runtimeConfig offered to this delegate's plugins
  std::vector<std::pair<std::string, std::string>> extra_args;  ///< IP=, MAC= for CNI_ARGS
  bool from_nad = false;            ///< resolved from a NetworkAttachmentDefinition
  Json selection_cni_args;          ///< the selection element's `cni-args` (object or null)
  bool has_default_route = false;   ///< the selection element carried `default-route`
  std::vector<std::string> default_route;  ///< its gateways
  std::string device_info_file;     ///< CNIDeviceInfoFile given to the delegate, "" when none
};

/// Resolves the attachments of a config that needs no Kubernetes: `clusterNetwork` (file, dir or
/// name in confDir) or the first delegate as the cluster network, then `defaultNetworks`, then the
/// remaining `delegates`. Interface names are assigned by position.
std::vector<Attachment> resolve_static_attachments(const cni::MetaConfig& config, const cni::Invocation& inv);

/// Assigns net<idx> names to attachments without one (index = position in the list) and checks
/// that every name is valid and unique. Throws CniError(InvalidConfig) naming the conflict.
void assign_interface_names(std::vector<Attachment>& attachments, const std::string& cluster_ifname);

}  // namespace manifold::plugin
