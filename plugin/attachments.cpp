// Implementation of static attachment resolution and interface naming.
#include "plugin/attachments.h"

#include <set>

#include "cni/conf_files.h"
#include "cni/error.h"

namespace manifold::plugin {

std::vector<Attachment> resolve_static_attachments(const cni::MetaConfig& config, const cni::Invocation& inv) {
  std::vector<Attachment> out;
  auto add = [&](Json delegate, bool cluster) {
    Attachment a;
    a.name = cni::delegate_name(delegate);
    a.delegate = std::move(delegate);
    a.cluster_network = cluster;
    a.runtime_config = config.runtime_config;
    out.push_back(std::move(a));
  };
  if (!config.cluster_network.empty()) {
    add(cni::resolve_file_network(config.cluster_network, config.conf_dir).config, true);
  } else {
    add(config.delegates.front(), true);
  }
  for (const auto& name : config.default_networks)
    add(cni::resolve_file_network(name, config.conf_dir).config, false);
  if (config.cluster_network.empty())
    for (size_t i = 1; i < config.delegates.size(); ++i) add(config.delegates[i], false);
  assign_interface_names(out, inv.ifname);
  return out;
}

void assign_interface_names(std::vector<Attachment>& attachments, const std::string& cluster_ifname) {
  std::set<std::string> seen;
  for (size_t i = 0; i < attachments.size(); ++i) {
    Attachment& a = attachments[i];
    if (a.ifname.empty()) a.ifname = a.cluster_network ? cluster_ifname : "net" + std::to_string(i);
    if (!cni::valid_ifname(a.ifname))
      cni::throw_invalid_config("invalid interface name \"" + a.ifname.substr(0, 32) + "\" for network \"" +
                                a.name + "\": must be 1-15 characters of [A-Za-z0-9_.-]");
    if (!seen.insert(a.ifname).second)
      cni::throw_invalid_config("interface name \"" + a.ifname + "\" is requested by more than one network");
  }
}

}  // namespace manifold::plugin
