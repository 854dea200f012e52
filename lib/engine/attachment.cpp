// Implementation of static attachment resolution and interface naming.
#include "engine/attachment.h"

#include <filesystem>
#include <set>

#include "cni/conf_files.h"
#include "cni/error.h"
#include "util/ifname.h"

namespace manifold::engine {

std::vector<Attachment> resolve_static_attachments(const cni::MetaConfig& config, const cni::Invocation& inv) {
  std::vector<Attachment> out;
  auto add = [&](Json delegate, bool cluster) {
    Attachment a;
    a.name = cni::delegate_name(delegate);
    a.delegate = std::move(delegate);
    a.cluster_network = cluster;
    a.runtime_config = runtime_config_for(config, cluster);
    out.push_back(std::move(a));
  };
  if (!config.cluster_network.empty()) {
    add(cni::resolve_file_network(config.cluster_network, config.conf_dir).config, true);
  } else {
    add(config.delegates.front(), true);
  }
  for (const auto& name : config.default_networks) add(cni::resolve_file_network(name, config.conf_dir).config, false);
  if (config.cluster_network.empty())
    for (size_t i = 1; i < config.delegates.size(); ++i) add(config.delegates[i], false);
  if (auto aux = auxiliary_chain(config)) out.push_back(std::move(*aux));
  assign_interface_names(out, inv.ifname);
  return out;
}

std::optional<Attachment> auxiliary_chain(const cni::MetaConfig& config) {
  const std::string& name = config.auxiliary_cni_chain_name;
  if (name.empty()) return std::nullopt;
  if (config.cluster_network.find('/') == std::string::npos)
    cni::throw_invalid_config("invalid config: auxiliaryCNIChainName \"" + name +
                              "\" needs clusterNetwork to be a path (its plugins are read from a directory beside it)");
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    cni::throw_invalid_config("invalid config: auxiliaryCNIChainName \"" + name + "\" must be a directory name");
  const auto dir = std::filesystem::path(config.cluster_network).parent_path() / name;
  std::vector<Json> plugins = cni::load_plugin_dir(dir.string());
  if (plugins.empty()) return std::nullopt;
  Json chain = {{"cniVersion", config.cni_version},
                {"name", name},
                {"plugins", Json::array({{{"type", "passthru"}, {"name", "passthru-cni"}}})}};
  for (Json& p : plugins) chain["plugins"].push_back(std::move(p));
  Attachment a;
  a.name = name;
  a.delegate = std::move(chain);
  a.runtime_config = runtime_config_for(config, false);
  return a;
}

Attachment inline_attachment(const cni::MetaConfig& config, size_t index) {
  Attachment a;
  a.delegate = config.delegates.at(index);
  a.name = cni::delegate_name(a.delegate);
  a.cluster_network = index == 0;
  a.runtime_config = runtime_config_for(config, a.cluster_network);
  return a;
}

std::string secondary_ifname(const std::string& cluster_ifname, size_t index) {
  if (cluster_ifname == "eth0") return "net" + std::to_string(index);
  std::string name = cluster_ifname + "-" + std::to_string(index);
  if (name.size() > 15)
    cni::throw_invalid_config("cannot name the secondary interface " + std::to_string(index) + " after CNI_IFNAME \"" +
                              cluster_ifname + "\": \"" + name +
                              "\" is longer than 15 characters; give that network an interface name");
  return name;
}

Json runtime_config_for(const cni::MetaConfig& config, bool cluster_network) {
  Json rc = config.runtime_config;
  if (!cluster_network && rc.is_object()) {
    rc.erase("ips");
    rc.erase("mac");
  }
  return rc;
}

std::string attachment_cni_args(const cni::CniArgs& runtime_args, const Attachment& a) {
  if (a.cluster_network) return cni::delegate_cni_args(runtime_args, a.extra_args);
  return cni::delegate_cni_args(runtime_args.without({"IP", "MAC"}), a.extra_args);
}

void assign_interface_names(std::vector<Attachment>& attachments, const std::string& cluster_ifname) {
  std::set<std::string> seen;
  for (size_t i = 0; i < attachments.size(); ++i) {
    Attachment& a = attachments[i];
    if (a.ifname.empty()) a.ifname = a.cluster_network ? cluster_ifname : secondary_ifname(cluster_ifname, i);
    if (!util::is_valid_ifname(a.ifname))
      cni::throw_invalid_config("invalid interface name \"" + a.ifname.substr(0, 32) + "\" for network \"" + a.name +
                                "\": must be 1-15 characters of [A-Za-z0-9_.-]");
    if (!seen.insert(a.ifname).second)
      cni::throw_invalid_config("interface name \"" + a.ifname + "\" is requested by more than one network");
  }
}

}  // namespace manifold::engine
