// Implementation of the entry's self-description: the "state", "config", "runtimeArgs" and
// "netnsIdentity" keys of the entry's extra object.
#include "engine/entry_state.h"

#include "cni/error.h"
#include "engine/detach.h"
#include "util/json_parse.h"

namespace manifold::engine {

namespace {

constexpr const char* kState = store::kEntryStateKey;
constexpr const char* kConfig = "config";
constexpr const char* kRuntimeArgs = "runtimeArgs";
constexpr const char* kNetnsIdentity = "netnsIdentity";

const char* state_name(EntryState state) {
  switch (state) {
    case EntryState::Adding:
      return "adding";
    case EntryState::Complete:
      return "complete";
    case EntryState::Deleting:
      return "deleting";
    case EntryState::Unknown:
      break;
  }
  return "";
}

// The string at `key` of the entry's extra object, or nullopt.
std::optional<std::string> extra_string(const store::ContainerRecord& record, const char* key) {
  auto it = record.extra.find(key);
  if (it == record.extra.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

EntryState entry_state(const store::ContainerRecord& record) {
  const std::string state = extra_string(record, kState).value_or("");
  for (EntryState s : {EntryState::Adding, EntryState::Complete, EntryState::Deleting})
    if (state == state_name(s)) return s;
  return EntryState::Unknown;
}

void set_entry_state(store::ContainerRecord& record, EntryState state) {
  if (state == EntryState::Unknown) {
    record.extra.erase(kState);
  } else {
    record.extra[kState] = state_name(state);
  }
}

void record_invocation(store::ContainerRecord& record, const cni::Invocation& inv) {
  record.extra[kConfig] = inv.stdin_data;
  record.extra[kRuntimeArgs] = inv.args_text;
}

std::optional<cni::PodRef> entry_pod(const store::ContainerRecord& record) {
  auto args = extra_string(record, kRuntimeArgs);
  if (!args) return std::nullopt;
  cni::PodRef ref = cni::pod_ref_from(cni::CniArgs::parse(*args));
  if (!ref.known()) return std::nullopt;
  return ref;
}

void record_netns_identity(store::ContainerRecord& record, const netlink::NetnsIdentity& identity) {
  record.extra[kNetnsIdentity] = {{"dev", identity.dev}, {"ino", identity.ino}};
}

std::optional<netlink::NetnsIdentity> recorded_netns_identity(const store::ContainerRecord& record) {
  auto it = record.extra.find(kNetnsIdentity);
  if (it == record.extra.end()) return std::nullopt;
  auto field = [&](const char* name) {
    auto f = it->find(name);
    if (f == it->end() || !f->is_number_unsigned())
      throw cni::CniError(cni::ErrorCode::Decoding, "the cache entry " + record.key().str() + " records a \"" +
                                                        kNetnsIdentity + "\" without an unsigned \"" + name + "\"");
    return f->get<std::uint64_t>();
  };
  if (!it->is_object())
    throw cni::CniError(cni::ErrorCode::Decoding, "the cache entry " + record.key().str() + " records a \"" +
                                                      kNetnsIdentity + "\" that is not an object");
  return netlink::NetnsIdentity{field("dev"), field("ino")};
}

std::optional<cni::Invocation> recorded_invocation(const store::ContainerRecord& record) {
  auto config = extra_string(record, kConfig);
  auto args = extra_string(record, kRuntimeArgs);
  if (!config || !args) return std::nullopt;
  cni::Invocation inv = invocation_for(record);  // container, CNI_IFNAME, CNI_PATH, version
  inv.command = cni::Command::Add;
  inv.netns = record.netns;
  inv.args_text = *args;
  inv.args = cni::CniArgs::parse(*args);
  inv.stdin_data = *config;
  inv.config = util::parse_json_bounded(*config);
  if (inv.config.is_discarded() || !inv.config.is_object())
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "the cache entry " + record.key().str() + " records a config that is not a JSON object");
  return inv;
}

}  // namespace manifold::engine
