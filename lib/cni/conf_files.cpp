// Implementation of network config lookup in confDir, files and directories.
#include "cni/conf_files.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "cni/error.h"
#include "cni/netconf.h"
#include "util/file_reader.h"
#include "util/log.h"

namespace manifold::cni {

namespace fs = std::filesystem;

namespace {

bool is_config_file(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".conf" || ext == ".conflist" || ext == ".json";
}

std::vector<fs::path> config_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec) && is_config_file(it->path())) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Reads and parses one config file; validates its shape according to its extension.
Json read_config_file(const fs::path& p) {
  util::FileRead file = util::try_read_file(p.string(), kMaxConfFileBytes);
  if (file.failure == util::ReadFailure::TooLarge)
    throw_invalid_config("network config " + p.string() + " is larger than 1 MiB");
  if (!file.ok())
    throw CniError(ErrorCode::Io, "cannot read network config " + p.string() + ": " + file.reason(kMaxConfFileBytes));
  Json j = Json::parse(file.data, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw_invalid_config("network config " + p.string() + " is not a JSON object");
  if (p.extension() == ".conflist") {
    if (!is_conflist(j)) throw_invalid_config("network config " + p.string() + " is a .conflist without \"plugins\"");
  } else if (!j.contains("type") && !is_conflist(j)) {
    throw_invalid_config("network config " + p.string() + " has no \"type\"; perhaps this is a .conflist?");
  }
  validate_delegate_shape(j, p.string());
  return j;
}

}  // namespace

std::vector<Json> load_plugin_dir(const std::string& dir) {
  std::vector<Json> plugins;
  for (const auto& file : config_files(dir)) {
    if (file.extension() == ".conflist") continue;  // plugin objects only: .conf and .json
    Json j = read_config_file(file);
    if (!j.contains("type"))
      throw_invalid_config("plugin config " + file.string() + " has no \"type\" (a chain holds single plugins)");
    plugins.push_back(std::move(j));
  }
  return plugins;
}

std::optional<NetworkFile> find_network_by_name(const std::string& dir, const std::string& name) {
  for (const auto& file : config_files(dir)) {
    try {
      Json j = read_config_file(file);
      if (delegate_name(j) == name) return NetworkFile{file.string(), std::move(j)};
    } catch (const CniError& e) {
      util::log_verbose("skipping ", file.string(), ": ", e.msg());
    }
  }
  return std::nullopt;
}

NetworkFile load_network_path(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) {
    auto files = config_files(p);
    if (files.empty()) throw CniError(ErrorCode::NetworkNotFound, "no network config files found in directory " + path);
    return NetworkFile{files.front().string(), read_config_file(files.front())};
  }
  if (!fs::exists(p, ec)) throw CniError(ErrorCode::NetworkNotFound, "network config file " + path + " does not exist");
  return NetworkFile{path, read_config_file(p)};
}

NetworkFile resolve_file_network(const std::string& value, const std::string& conf_dir) {
  if (value.empty()) throw_invalid_config("empty network name");
  if (value.find('/') != std::string::npos) return load_network_path(value);
  auto found = find_network_by_name(conf_dir, value);
  if (!found)
    throw CniError(ErrorCode::NetworkNotFound, "no network named \"" + value + "\" in the config files of " + conf_dir);
  return *found;
}

}  // namespace manifold::cni
