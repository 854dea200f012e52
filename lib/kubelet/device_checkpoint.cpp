// Implementation of the strict checkpoint reader: parse with a depth bound, check every level's
// type on the way to the pod's entries, collect their IDs.
#include "kubelet/device_checkpoint.h"

#include "cni/error.h"
#include "util/json_parse.h"
#include "util/quote.h"

namespace manifold::kubelet {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw cni::CniError(cni::ErrorCode::Decoding, "kubelet device checkpoint " + path + " is invalid: " + why);
}

void collect_ids(const Json& ids, const std::string& path, const std::string& where, std::vector<std::string>& out) {
  if (ids.is_array()) {
    for (const auto& id : ids) {
      if (!id.is_string()) bad(path, where + " has a device ID that is not a string");
      out.push_back(id.get<std::string>());
    }
  } else if (ids.is_object()) {
    for (const auto& [numa, list] : ids.items()) {
      if (!list.is_array() && !list.is_null())
        bad(path, where + " NUMA node " + util::quote_bytes(numa, 16) + " is not a list");
      if (list.is_array()) collect_ids(list, path, where, out);
    }
  } else if (!ids.is_null()) {
    bad(path, where + " DeviceIDs is neither a list nor a map of lists");
  }
}

const Json& entries_of(const Json& checkpoint, const std::string& path) {
  static const Json kNone = Json::array();
  if (!checkpoint.is_object()) bad(path, "it is not a JSON object");
  auto data = checkpoint.find("Data");
  if (data == checkpoint.end() || data->is_null()) return kNone;
  if (!data->is_object()) bad(path, "\"Data\" is not an object");
  auto entries = data->find("PodDeviceEntries");
  if (entries == data->end() || entries->is_null()) return kNone;
  if (!entries->is_array()) bad(path, "\"Data.PodDeviceEntries\" is not a list");
  return *entries;
}

}  // namespace

DeviceTable checkpoint_devices(std::string_view text, const std::string& path, const std::string& pod_uid) {
  if (pod_uid.empty())
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "the pod has no UID, so its devices cannot be found in the kubelet checkpoint " + path);
  const Json checkpoint = util::parse_json_bounded(std::string(text));
  if (checkpoint.is_discarded()) bad(path, "it is not valid JSON (truncated, or not a checkpoint)");
  DeviceTable out;
  const Json& entries = entries_of(checkpoint, path);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Json& e = entries[i];
    const std::string where = "entry " + std::to_string(i);
    if (!e.is_object()) bad(path, where + " is not an object");
    auto uid = e.find("PodUID");
    if (uid == e.end() || !uid->is_string()) bad(path, where + " has no string PodUID");
    if (uid->get<std::string>() != pod_uid) continue;
    auto resource = e.find("ResourceName");
    if (resource == e.end() || !resource->is_string() || resource->get<std::string>().empty())
      bad(path, where + " has no ResourceName");
    auto ids = e.find("DeviceIDs");
    if (ids == e.end()) continue;
    collect_ids(*ids, path, where, out[resource->get<std::string>()]);
  }
  sort_device_table(out);
  return out;
}

}  // namespace manifold::kubelet
