// Attachment resolution: which networks a CNI ADD attaches, in which order, with which interface
// names. The cluster network comes first (CNI_IFNAME), then defaultNetworks, then the remaining
// inline delegates, each named by its position in the whole list unless it asks for a name:
// net<idx> when the runtime attaches manifold as eth0 (the usual case, as in Multus), else
// <CNI_IFNAME>-<idx>, so that two manifold networks a runtime attaches to one container (podman
// `--network a,b` calls manifold with eth0, then eth1) never pick the same names. What the runtime
// asked for with CNI_IFNAME in mind — `IP=`/`MAC=` in CNI_ARGS, `ips`/`mac` in runtimeConfig — goes
// to the cluster network only.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cni/netconf.h"
#include "cni/skel.h"
#include "util/json.h"

namespace manifold::engine {

/// One network to attach, before its delegate is run.
struct Attachment {
  std::string name;                                             ///< display/status name (CNI name, or ns/name for NADs)
  std::string ifname;                                           ///< interface name in the pod
  Json delegate;                                                ///< the conf or conflist, not yet prepared
  bool cluster_network = false;                                 ///< the first attachment, on CNI_IFNAME
  Json runtime_config = Json::object();                         ///< runtimeConfig offered to this delegate's plugins
  std::vector<std::pair<std::string, std::string>> extra_args;  ///< IP=, MAC= for CNI_ARGS
  bool from_nad = false;                                        ///< resolved from a NetworkAttachmentDefinition
  Json selection_cni_args;                                      ///< the selection element's `cni-args` (object or null)
  bool has_default_route = false;                               ///< the selection element carried `default-route`
  std::vector<std::string> default_route;                       ///< its gateways
  std::string device_info_file;  ///< CNIDeviceInfoFile given to the delegate, "" when none
  std::string resource_name;     ///< the NAD's k8s.v1.cni.cncf.io/resourceName, when it got a device
  std::string device_id;         ///< the kubelet-allocated device it got, "" when none
  /// For a network of the pod's networks annotation: the element that asked for it
  /// (k8s::selection_record), recorded so the node agent can match it later; null otherwise.
  Json selection;
};

/// Resolves the attachments of a config that needs no Kubernetes: `clusterNetwork` (file, dir or
/// name in confDir) or the first delegate as the cluster network, then `defaultNetworks`, then the
/// remaining `delegates`. Interface names are assigned by position.
std::vector<Attachment> resolve_static_attachments(const cni::MetaConfig& config, const cni::Invocation& inv);

/// Multus's auxiliary chain (`auxiliaryCNIChainName`): a conflist named after the key, of the
/// cluster network's version, holding `{"type":"passthru","name":"passthru-cni"}` followed by the
/// plugin configs in `<directory of clusterNetwork>/<name>/`. Appended after every other
/// attachment, and only when that directory adds at least one plugin. nullopt when the key is not
/// set or the directory adds nothing; CniError(InvalidConfig) when `clusterNetwork` is not a path.
std::optional<Attachment> auxiliary_chain(const cni::MetaConfig& config);

/// The interface name of the secondary attachment at position `index` when the runtime's
/// CNI_IFNAME is `cluster_ifname`: "net<index>" for "eth0", else "<cluster_ifname>-<index>". Throws
/// CniError(InvalidConfig) when that would be longer than 15 characters.
std::string secondary_ifname(const std::string& cluster_ifname, size_t index);

/// Assigns names to attachments without one (secondary_ifname by position in the list; the cluster
/// network gets `cluster_ifname`) and checks that every name is valid and unique. Throws
/// CniError(InvalidConfig) naming the conflict.
void assign_interface_names(std::vector<Attachment>& attachments, const std::string& cluster_ifname);

/// The attachment of inline delegate `index` of `config.delegates` (index 0 is the cluster network).
Attachment inline_attachment(const cni::MetaConfig& config, size_t index);

/// The runtimeConfig offered to an attachment's delegate: the runtime's, without `ips` and `mac`
/// for every attachment but the cluster network (they were requested for CNI_IFNAME).
Json runtime_config_for(const cni::MetaConfig& config, bool cluster_network);

/// The CNI_ARGS of attachment `a`: the runtime's (without `IP=`/`MAC=` unless `a` is the cluster
/// network), then the attachment's own pairs (a selection element's ips/mac), `IgnoreUnknown=true`
/// first when there are any.
std::string attachment_cni_args(const cni::CniArgs& runtime_args, const Attachment& a);

}  // namespace manifold::engine
