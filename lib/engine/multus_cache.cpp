// Implementation of reading Multus thin's cache: the scratch file's delegates turned into
// attachment records (interface names as Multus's getIfname gives them, a conflist without a
// cniVersion given the config's, as Multus's DEL does), each joined with libcni's result file.
#include "engine/multus_cache.h"

#include "cni/error.h"
#include "engine/cached.h"
#include "http/kubeconfig.h"
#include "util/error.h"
#include "util/ifname.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using cni::CniError;

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw CniError(cni::ErrorCode::Decoding, "Multus's cache file " + path + " " + why);
}

// A string member of `o`, or "" when it is absent or null; anything else fails the file.
std::string string_member(const Json& o, const char* key, const std::string& path) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::string();
  if (!it->is_string()) bad_file(path, std::string("has a delegate whose \"") + key + "\" is not a string");
  return it->get<std::string>();
}

// The delegate's raw config: the base64 "Bytes" Go's encoding/json writes for a []byte, decoded;
// a conflist without cniVersion gets `version`.
std::string delegate_config(const Json& delegate, const std::string& version, const std::string& path) {
  std::optional<std::string> text = http::decode_base64(string_member(delegate, "Bytes", path));
  if (!text || text->empty()) bad_file(path, "has a delegate without a base64 \"Bytes\" config");
  Json config = util::parse_json_bounded(*text);
  if (config.is_discarded() || !config.is_object()) bad_file(path, "has a delegate whose config is not a JSON object");
  if (config.contains("plugins") && !config.contains("cniVersion") && !version.empty()) {
    config["cniVersion"] = version;
    return config.dump();
  }
  return *text;
}

// libcni's cached CNI_ARGS ("cniArgs": [[key, value], …]) as CNI_ARGS text; null when absent or
// wrongly shaped (the runtime's CNI_ARGS are used then).
Json cached_args(const Json& cache) {
  auto it = cache.find("cniArgs");
  if (it == cache.end() || !it->is_array()) return nullptr;
  std::string text;
  for (const auto& pair : *it) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) return nullptr;
    if (!text.empty()) text += ';';
    text += pair[0].get<std::string>() + "=" + pair[1].get<std::string>();
  }
  return text;
}

// Fills `a`'s result and CNI_ARGS from libcni's result file of its delegate, when there is a usable
// one; returns the file's path when it exists (it is removed with the entry either way).
std::optional<std::string> join_result(const Services& services, const std::string& dir, const std::string& cid,
                                       store::AttachmentRecord& a) {
  Json config = Json::parse(a.config);
  auto name = config.find("name");
  if (name == config.end() || !name->is_string()) return std::nullopt;
  const std::string& network = name->get_ref<const std::string&>();
  if (network.empty() || network.find('/') != std::string::npos || network == "." || network == "..")
    return std::nullopt;  // libcni would not have made a file of it here
  std::string path = dir + "/results/" + network + "-" + cid + "-" + a.ifname;
  if (!services.file_exists || !services.file_exists(path)) return std::nullopt;
  try {
    Json cache = util::parse_json_bounded(services.files->read(path, store::kMaxCacheFileBytes));
    auto result = cache.is_object() ? cache.find("result") : cache.end();
    if (result != cache.end() && result->is_object()) {
      a.result = result->dump();
      a.cni_args = cached_args(cache);
    } else {
      util::log_warning("libcni's cache file ", path, " holds no result; DEL of \"", a.name, "\" without one");
    }
  } catch (const util::IoError& e) {
    util::log_warning("cannot read libcni's cache file: ", e.msg(), "; DEL of \"", a.name, "\" without a result");
  }
  return path;
}

// One Multus delegate as an attachment record, named as Multus's getIfname names it.
store::AttachmentRecord attachment_of(const Json& delegate, size_t index, const cni::Invocation& inv,
                                      const std::string& device_info_dir, const std::string& path) {
  if (!delegate.is_object()) bad_file(path, "has a delegate that is not an object");
  store::AttachmentRecord a;
  a.config = delegate_config(delegate, inv.version, path);
  a.name = string_member(delegate, "Name", path);
  a.ifname = string_member(delegate, "ifnameRequest", path);
  if (a.ifname.empty()) a.ifname = index == 0 ? inv.ifname : "net" + std::to_string(index);
  // It reaches the kernel and names a file below the cache directory: the spec's characters only.
  if (!util::is_valid_ifname(a.ifname)) bad_file(path, "has a delegate with an invalid interface name");
  a.cluster_network = index == 0;
  if (!has_usable_config(a)) bad_file(path, "has a delegate config without a plugin type");
  if (!string_member(delegate, "deviceID", path).empty() && !device_info_dir.empty()) {
    std::string file = a.name + "-" + inv.container_id + "_" + a.ifname;
    for (char& c : file)
      if (c == '/') c = '-';
    a.device_info_file = device_info_dir + "/cni/" + file;
  }
  return a;
}

}  // namespace

std::optional<MultusEntry> read_multus_entry(const Services& services, const std::string& multus_dir,
                                             const cni::Invocation& inv, const std::string& device_info_dir) {
  if (multus_dir.empty() || !services.file_exists || !services.files) return std::nullopt;
  store::validate_container_id(inv.container_id);  // it becomes a file name below
  MultusEntry entry;
  entry.scratch_file = multus_dir + "/" + inv.container_id;
  if (!services.file_exists(entry.scratch_file)) return std::nullopt;
  std::string text;
  try {
    text = services.files->read(entry.scratch_file, store::kMaxCacheFileBytes);
  } catch (const util::IoError& e) {
    throw CniError(cni::ErrorCode::Decoding, "cannot read Multus's cache: " + e.msg());
  }
  Json delegates = util::parse_json_bounded(text);
  if (delegates.is_discarded() || !delegates.is_array() || delegates.empty())
    bad_file(entry.scratch_file, "is not a JSON list of delegates");
  auto& record = entry.record;
  record.container_id = inv.container_id;
  record.netns = inv.netns;
  record.ifname = inv.ifname;
  record.cni_version = inv.version;
  record.cni_path = inv.path;
  for (size_t i = 0; i < delegates.size(); ++i) {
    record.attachments.push_back(attachment_of(delegates[i], i, inv, device_info_dir, entry.scratch_file));
    if (auto file = join_result(services, multus_dir, inv.container_id, record.attachments.back()))
      entry.result_files.push_back(*file);
  }
  return entry;
}

void remove_multus_entry(const Services& services, const MultusEntry& entry) noexcept {
  if (!services.file_writer) return;
  std::vector<std::string> files = entry.result_files;
  files.push_back(entry.scratch_file);
  for (const auto& path : files) {
    try {
      services.file_writer->remove(path);
    } catch (const std::exception& e) {
      util::log_error("cannot remove Multus's cache file ", path, ": ", e.what());
    }
  }
}

}  // namespace manifold::engine
