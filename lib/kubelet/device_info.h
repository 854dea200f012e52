// Device-info files (Network Plumbing WG Device Information spec 1.1.0). A device plugin leaves a
// file per allocated device under `<deviceInfoDir>/dp/`; before a device network's delegate runs,
// manifold copies it to the attachment's own file under `<deviceInfoDir>/cni/` (the path the
// delegate gets as `CNIDeviceInfoFile`), puts the file's content in the network-status
// `device-info`, and removes the attachment's file when the attachment goes (DEL, a rolled-back ADD,
// GC). The content is decoded as Multus decodes it: known fields only, in the spec's order, each a
// string. A file that is not such an object is a warning, never an error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/json.h"

namespace manifold::kubelet {

/// The largest device-info file read (the spec's objects are a few hundred bytes).
inline constexpr std::size_t kMaxDeviceInfoBytes = 64 * 1024;

/// The device plugin's file for device `device_id` of `resource`:
/// `<dir>/dp/<resource>-<device_id>-device.json`, every '/' of the name replaced by '-'.
std::string device_plugin_info_path(const std::string& dir, const std::string& resource, const std::string& device_id);

/// The attachment's file: `<dir>/cni/<network>-<container_id>_<ifname>`, every '/' of the name
/// replaced by '-' (`network` is the NAD's "<namespace>/<name>").
std::string attachment_info_path(const std::string& dir, const std::string& network, const std::string& container_id,
                                 const std::string& ifname);

/// Device information as Multus decodes it into the NAD client's DeviceInfo: the known fields only,
/// in struct order, empty strings omitted. Null when `in` does not decode (not an object, a field
/// of the wrong type).
Json normalize_device_info(const Json& in);

/// The device information in file content `text`: normalize_device_info of the parsed text, null
/// when the text is not JSON or does not decode.
Json parse_device_info(std::string_view text);

}  // namespace manifold::kubelet
