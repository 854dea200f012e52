// The record types' JSON mapping, the entry file names and key validation, and the cache file's
// text: configs and results are stored as JSON strings, so they come back byte for byte, and a file
// is parsed with a depth bound and checked field by field, so a damaged one is a CniError(Decoding)
// naming it, never a library exception.
#include "store/record.h"

#include <algorithm>

#include "cni/error.h"
#include "store/record_text.h"
#include "util/ifname.h"
#include "util/quote.h"
#include "util/json_error.h"

namespace manifold::store {

namespace {

constexpr const char* kFormat = "manifold-cache";
constexpr int kFormatVersion = 2;
/// The format of the first layout's `<id>.json` files, still read.
constexpr int kLegacyFormatVersion = 1;

[[noreturn]] void throw_corrupt(const std::string& source, const std::string& problem) {
  throw cni::CniError(cni::ErrorCode::Decoding, "corrupt cache file " + source + ": " + problem);
}

bool is_id_char(char c, bool first) {
  bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  return alnum || (!first && (c == '_' || c == '.' || c == '-'));
}

const Json& member(const Json& obj, const char* key, const std::string& where, const std::string& source) {
  auto it = obj.find(key);
  if (it == obj.end()) throw_corrupt(source, "\"" + where + key + "\" is missing");
  return *it;
}

std::string string_member(const Json& obj, const char* key, const std::string& where, const std::string& source) {
  const Json& v = member(obj, key, where, source);
  if (!v.is_string()) throw_corrupt(source, "\"" + where + key + "\" is not a string");
  return v.get<std::string>();
}

Json object_member(const Json& obj, const char* key, const std::string& where, const std::string& source) {
  const Json& v = member(obj, key, where, source);
  if (!v.is_object()) throw_corrupt(source, "\"" + where + key + "\" is not an object");
  return v;
}

/// Moves the state the engine reads by name out of `a.extra` into its typed fields.
void take_typed_state(AttachmentRecord& a, const std::string& prefix, const std::string& source) {
  auto take = [&a](const char* key) {
    auto it = a.extra.find(key);
    if (it == a.extra.end()) return Json();
    Json value = std::move(*it);
    a.extra.erase(key);
    return value;
  };
  a.cni_args = take("cniArgs");
  const Json device_info = take("deviceInfoFile");
  if (!device_info.is_null() && !device_info.is_string())
    throw_corrupt(source, "\"" + prefix + "extra.deviceInfoFile\" is not a string");
  a.device_info_file = device_info.is_string() ? device_info.get<std::string>() : std::string();
  a.scoping = take("scoping");
  a.policy = take("policy");
  a.status_fields = take("statusFields");
  const Json started = take("delegateStarted");
  if (!started.is_null() && !started.is_boolean())
    throw_corrupt(source, "\"" + prefix + "extra.delegateStarted\" is not a boolean");
  a.delegate_started = !started.is_boolean() || started.get<bool>();
}

}  // namespace

Json attachment_extra_json(const AttachmentRecord& a) {
  Json extra = a.extra;
  if (!a.cni_args.is_null()) extra["cniArgs"] = a.cni_args;
  if (!a.device_info_file.empty()) extra["deviceInfoFile"] = a.device_info_file;
  if (!a.scoping.is_null()) extra["scoping"] = a.scoping;
  if (!a.policy.is_null()) extra["policy"] = a.policy;
  if (!a.status_fields.is_null()) extra["statusFields"] = a.status_fields;
  if (!a.delegate_started) extra["delegateStarted"] = false;
  return extra;
}

namespace {

AttachmentRecord attachment_from_json(const Json& j, const std::string& where, const std::string& source) {
  if (!j.is_object()) throw_corrupt(source, "\"" + where + "\" is not an object");
  std::string prefix = where + ".";
  AttachmentRecord a;
  a.name = string_member(j, "name", prefix, source);
  a.ifname = string_member(j, "ifname", prefix, source);
  a.config = string_member(j, "config", prefix, source);
  a.result = string_member(j, "result", prefix, source);
  const Json& cluster = member(j, "clusterNetwork", prefix, source);
  if (!cluster.is_boolean()) throw_corrupt(source, "\"" + prefix + "clusterNetwork\" is not a boolean");
  a.cluster_network = cluster.get<bool>();
  a.extra = object_member(j, "extra", prefix, source);
  take_typed_state(a, prefix, source);
  return a;
}

}  // namespace

void validate_container_id(std::string_view id) {
  if (is_valid_container_id(id)) return;
  std::string shown(id.substr(0, 64));
  if (id.size() > 64) shown += "...";
  throw cni::CniError(cni::ErrorCode::InvalidEnv, "invalid container ID " +
                                                      Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace) +
                                                      ": must match [A-Za-z0-9][A-Za-z0-9_.-]* and be at most " +
                                                      std::to_string(kMaxContainerIdLength) + " characters");
}

std::string EntryKey::str() const { return container_id + "/" + network + "/" + ifname; }

std::string entry_file_name(const std::string& network, const std::string& ifname) {
  return util::percent_encode(network, "_-") + "@" + ifname + std::string(kEntryExt);
}

std::optional<std::pair<std::string, std::string>> parse_entry_file_name(std::string_view name) {
  if (name.size() <= kEntryExt.size() || name.substr(name.size() - kEntryExt.size()) != kEntryExt) return std::nullopt;
  name.remove_suffix(kEntryExt.size());
  size_t at = name.rfind('@');
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string network;
  for (size_t i = 0; i < at; ++i) {
    if (name[i] != '%') {
      network += name[i];
      continue;
    }
    if (i + 2 >= at || hex(name[i + 1]) < 0 || hex(name[i + 2]) < 0) return std::nullopt;
    network += static_cast<char>(hex(name[i + 1]) * 16 + hex(name[i + 2]));
    i += 2;
  }
  std::string ifname(name.substr(at + 1));
  if (entry_file_name(network, ifname) != std::string(name) + std::string(kEntryExt)) return std::nullopt;
  return std::make_pair(std::move(network), std::move(ifname));
}

void validate_entry_key(const EntryKey& key) {
  validate_container_id(key.container_id);
  if (key.legacy()) {
    if (!key.ifname.empty())
      throw cni::CniError(cni::ErrorCode::InvalidConfig, "a cache entry needs the network's name");
    return;
  }
  if (!util::is_valid_ifname(key.ifname))
    throw cni::CniError(cni::ErrorCode::InvalidEnv,
                        "invalid interface name " +
                            Json(key.ifname.substr(0, 32)).dump(-1, ' ', false, Json::error_handler_t::replace) +
                            " for a cache entry");
  size_t encoded = entry_file_name(key.network, key.ifname).size() - key.ifname.size() - 1 - kEntryExt.size();
  if (encoded > kMaxEncodedNetworkLength)
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "network name of " + std::to_string(key.network.size()) +
                                                           " bytes is too long to be cached (at most " +
                                                           std::to_string(kMaxEncodedNetworkLength) +
                                                           " bytes of [A-Za-z0-9_-], others count three)");
}

Json attachment_to_json(const AttachmentRecord& a) {
  return Json{{"name", a.name},
              {"ifname", a.ifname},
              {"config", a.config},
              {"result", a.result},
              {"clusterNetwork", a.cluster_network},
              {"extra", attachment_extra_json(a)}};
}

Json record_to_json(const ContainerRecord& record) {
  Json attachments = Json::array();
  for (const AttachmentRecord& a : record.attachments) attachments.push_back(attachment_to_json(a));
  return Json{{"kind", kFormat},
              {"version", kFormatVersion},
              {"containerId", record.container_id},
              {"network", record.network},
              {"ifname", record.ifname},
              {"netns", record.netns},
              {"cniVersion", record.cni_version},
              {"cniPath", record.cni_path},
              {"attachments", std::move(attachments)},
              {"extra", record.extra}};
}

ContainerRecord record_from_json(const Json& j, const EntryKey& key, const std::string& source) {
  if (!j.is_object()) throw_corrupt(source, "not a JSON object");
  const Json& kind = member(j, "kind", "", source);
  const Json& version = member(j, "version", "", source);
  const bool legacy = version == kLegacyFormatVersion;
  if (kind != kFormat || (version != kFormatVersion && !legacy)) {
    throw_corrupt(source, "unknown format " + kind.dump(-1, ' ', false, Json::error_handler_t::replace) + " version " +
                              version.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  ContainerRecord r;
  r.container_id = string_member(j, "containerId", "", source);
  if (r.container_id != key.container_id) throw_corrupt(source, "it belongs to another container ID");
  if (!legacy) {
    r.network = string_member(j, "network", "", source);
    r.cni_path = string_member(j, "cniPath", "", source);
  }
  r.netns = string_member(j, "netns", "", source);
  r.ifname = string_member(j, "ifname", "", source);
  if (!key.legacy() && (r.network != key.network || r.ifname != key.ifname))
    throw_corrupt(source, "it belongs to another network or interface");
  r.cni_version = string_member(j, "cniVersion", "", source);
  const Json& attachments = member(j, "attachments", "", source);
  if (!attachments.is_array()) throw_corrupt(source, "\"attachments\" is not an array");
  for (size_t i = 0; i < attachments.size(); ++i) {
    r.attachments.push_back(attachment_from_json(attachments[i], "attachments[" + std::to_string(i) + "]", source));
  }
  r.extra = object_member(j, "extra", "", source);
  return r;
}

// ---- the file text ----

void check_storable(const ContainerRecord& record) {
  if (!record.extra.is_object()) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "cache record of " + record.container_id + ": extra is not an object");
  }
  for (const AttachmentRecord& a : record.attachments) {
    if (!a.extra.is_object()) {
      throw cni::CniError(cni::ErrorCode::Internal,
                          "cache record of " + record.container_id + ": extra of " + a.name + " is not an object");
    }
  }
}

/// Compact JSON text of `value` (a part of `record`); CniError(Internal) when it cannot be

/// serialised (invalid UTF-8).
std::string compact_json(const Json& value, const ContainerRecord& record) {
  try {
    return value.dump();
  } catch (const Json::exception& e) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "cannot cache container " + record.container_id + ": " + std::string(e.what()));
  }
}

std::string finish_text(std::string text, const ContainerRecord& record) {
  text += '\n';
  if (text.size() > kMaxCacheFileBytes) {
    throw cni::CniError(cni::ErrorCode::Io, "cache record of container " + record.container_id + " is " +
                                                std::to_string(text.size()) + " bytes, more than the limit of " +
                                                std::to_string(kMaxCacheFileBytes));
  }
  return text;
}

std::string record_text(const ContainerRecord& record) {
  check_storable(record);
  return finish_text(compact_json(record_to_json(record), record), record);
}

std::string assemble_record_text(const ContainerRecord& record, const std::vector<const std::string*>& attachments) {
  std::string text = "{\"kind\":" + compact_json(Json(kFormat), record) +
                     ",\"version\":" + std::to_string(kFormatVersion) +
                     ",\"containerId\":" + compact_json(Json(record.container_id), record) +
                     ",\"network\":" + compact_json(Json(record.network), record) +
                     ",\"ifname\":" + compact_json(Json(record.ifname), record) +
                     ",\"netns\":" + compact_json(Json(record.netns), record) +
                     ",\"cniVersion\":" + compact_json(Json(record.cni_version), record) +
                     ",\"cniPath\":" + compact_json(Json(record.cni_path), record) + ",\"attachments\":[";
  const std::string extra = compact_json(record.extra, record);
  std::size_t size = text.size() + attachments.size() + extra.size() + 16;
  for (const std::string* t : attachments) size += t->size();
  text.reserve(size);  // one allocation for the whole file text
  for (size_t i = 0; i < attachments.size(); ++i) {
    if (i > 0) text += ',';
    text += *attachments[i];
  }
  text.append("],\"extra\":").append(extra).append("}");
  return finish_text(std::move(text), record);
}

Json parse_record_json(const std::string& text, const std::string& source) {
  Json::parser_callback_t depth_limit = [&source](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxCacheJsonDepth) {
      throw_corrupt(source, "JSON nested deeper than " + std::to_string(kMaxCacheJsonDepth) + " levels");
    }
    return true;
  };
  try {
    return Json::parse(text, depth_limit);
  } catch (const Json::exception& e) {
    throw_corrupt(source, util::describe_json_error(e));
  }
}

bool is_valid_container_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxContainerIdLength) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    if (!is_id_char(id[i], i == 0)) return false;
  }
  return true;
}

}  // namespace manifold::store
