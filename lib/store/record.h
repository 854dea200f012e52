// The cache's records and what identifies them: one entry per runtime call that
// attached something — container ID, network name and CNI_IFNAME, as libcni keys its own results —
// holding the exact bytes of every delegate config and result, the interface names, and per
// attachment the typed state DEL, CHECK and GC need (CNI_ARGS, device-info file, scoping state,
// MultiNetworkPolicy state, extra network-status fields). Also the mapping to and from the cache file's JSON (format
// "manifold-cache" 2; version 1 of the first layout is still read), which treats every file as
// untrusted input, and the validation of keys before they become file names.
#pragma once

#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/json.h"

namespace manifold::store {

/// The file name suffix of every cache entry file, in both layouts.
inline constexpr std::string_view kEntryExt = ".json";

/// One network attachment of a container.
struct AttachmentRecord {
  /// Status/display name ("<namespace>/<name>" for NADs).
  std::string name;
  /// Interface name inside the pod.
  std::string ifname;
  /// Exact bytes passed to the delegate: conf or conflist JSON text.
  std::string config;
  /// Exact result bytes; "" until the ADD succeeded.
  std::string result;
  /// True for the cluster network (eth0) attachment.
  bool cluster_network = false;
  /// The CNI_ARGS its delegate got at ADD ("cniArgs"): a string, or null when none were cached.
  /// Anything else marks a corrupt entry (engine/cached.h reports it when the value is used).
  Json cni_args;
  /// The device-info file given to its delegate ("deviceInfoFile"); "" when none.
  std::string device_info_file;
  /// Its network-scoping state ("scoping", see scoping/scoping.h); null when it has none.
  Json scoping;
  /// Its MultiNetworkPolicy rules' state ("policy", see policy/enforce.h: PolicyState); null when
  /// no policy covered it at ADD.
  Json policy;
  /// Extra fields of its network-status entry ("statusFields"); null when none.
  Json status_fields;
  /// False while the attachment is recorded but its delegate was never started ("delegateStarted":
  /// false): an ADD records every network before it runs the first delegate, so a kill leaves
  /// the ones after the running delegate in this state, and a DEL has nothing to release for them.
  bool delegate_started = true;
  /// Any other keys of its "extra" object in the cache file, kept as they were.
  Json extra = Json::object();

  bool operator==(const AttachmentRecord&) const = default;
};

/// What identifies one cache entry: the container, the network (the meta config's "name") and the
/// CNI_IFNAME of the runtime call that made it.
struct EntryKey {
  std::string container_id;  ///< CNI_CONTAINERID
  /// The network's name; "" names the one entry a container had in the first layout, which
  /// recorded no network (such an entry's `ifname` is "" as well).
  std::string network;
  std::string ifname;  ///< CNI_IFNAME
  /// "<containerID>/<network>/<ifname>", for messages.
  std::string str() const;
  /// True for the key of a first-layout entry.
  bool legacy() const { return network.empty(); }

  auto operator<=>(const EntryKey&) const = default;
};

/// The key of a record's `extra` object that holds the entry's life-cycle state ("adding",
/// "complete", "deleting": engine/entry_state.h), which FileCache can also mark in place.
inline constexpr const char* kEntryStateKey = "state";

/// Everything cached for one runtime call: its key, the namespace and every attachment it made.
struct ContainerRecord {
  std::string container_id;  ///< CNI_CONTAINERID
  std::string network;       ///< the network's name ("" in an entry of the first layout)
  std::string netns;         ///< CNI_NETNS at ADD
  std::string ifname;        ///< CNI_IFNAME
  std::string cni_version;   ///< the config's cniVersion
  std::string cni_path;      ///< CNI_PATH at ADD, so a DEL outside a CNI call finds the delegates
  std::vector<AttachmentRecord> attachments;
  /// Entry-level state; must be a JSON object.
  Json extra = Json::object();

  /// This record's cache key.
  EntryKey key() const { return {container_id, network, ifname}; }
  bool operator==(const ContainerRecord&) const = default;
};

/// Longest accepted container ID. Real IDs are 64 hex digits; the bound keeps every file name we
/// derive (longest: "<id>.<pid>.<seq>.tmp", 33 more bytes) under NAME_MAX (255), so an ID that
/// passes validation can never fail later with ENAMETOOLONG.
inline constexpr size_t kMaxContainerIdLength = 200;
/// Largest cache file accepted on load (and produced on save).
inline constexpr size_t kMaxCacheFileBytes = 8u << 20;
/// Deepest JSON nesting accepted in a cache file.
inline constexpr int kMaxCacheJsonDepth = 64;
/// Default bound on waiting for a container's lock.
/// Longest accepted network name, once percent-encoded for its file name.
inline constexpr size_t kMaxEncodedNetworkLength = 200;

/// Throws CniError(InvalidEnv) unless `id` matches [A-Za-z0-9][A-Za-z0-9_.-]* and has at most
/// kMaxContainerIdLength characters (so it is safe as a file name).
void validate_container_id(std::string_view id);

/// Throws CniError unless `key` can name an entry: a valid container ID (InvalidEnv), a network
/// name of at most kMaxEncodedNetworkLength bytes once encoded (InvalidConfig) and a CNI_IFNAME of
/// 1-15 characters of [A-Za-z0-9_.-] (InvalidEnv); or, for a first-layout key, a valid container ID
/// and an empty ifname.
void validate_entry_key(const EntryKey& key);

/// The file name of an entry: "<network, percent-encoded>@<ifname>.json". Every byte outside
/// [A-Za-z0-9_-] of the network name (so '.', '@', '/' and '%' too) becomes %XX.
std::string entry_file_name(const std::string& network, const std::string& ifname);

/// The (network, ifname) an entry file name encodes; nullopt for any other name.
std::optional<std::pair<std::string, std::string>> parse_entry_file_name(std::string_view name);

/// Serialises a record to its cache-file JSON (format "manifold-cache" version 2).
Json record_to_json(const ContainerRecord& record);
/// One element of the record's "attachments" list in the cache-file JSON.
Json attachment_to_json(const AttachmentRecord& attachment);
/// Parses and validates cache-file JSON of version 2, or of version 1 (the first layout: no
/// network, no CNI_PATH); throws CniError(Decoding) mentioning `source` on any missing or wrongly
/// typed field, an unknown format, or a key that differs from `key` (container ID always; network
/// and ifname unless `key` is a first-layout key).
ContainerRecord record_from_json(const Json& json, const EntryKey& key, const std::string& source);

}  // namespace manifold::store
