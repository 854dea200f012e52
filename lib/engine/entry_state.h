// What a cache entry records about itself beyond its attachments, for the node agent: where in its
// life it is (an ADD still attaching, complete, a DEL begun), the exact config and CNI_ARGS the
// runtime called with, and the pod it belongs to. The agent acts only on complete entries, and
// rebuilds the runtime's invocation from them to attach one more network the way the ADD would
// have. Entries written before these keys existed report State::Unknown and are left alone. A
// complete entry also records the identity (device and inode) of the network namespace its ADD
// worked in, so a hot-plug can tell when the recorded path names another namespace now.
#pragma once

#include <optional>
#include <string>

#include "cni/cni_args.h"
#include "cni/skel.h"
#include "netlink/netns.h"
#include "store/record.h"

namespace manifold::engine {

/// Where an entry is in its life.
enum class EntryState {
  Adding,    ///< an ADD is attaching (or was killed while attaching; the runtime's DEL removes it)
  Complete,  ///< the ADD attached everything and wrote the network-status
  Deleting,  ///< a DEL has begun (what it could not delete stays recorded for the next DEL)
  Unknown,   ///< no state recorded: written by an older manifold, or not by an ADD
};

/// The state recorded in `record`.
EntryState entry_state(const store::ContainerRecord& record);
/// Records `state` in `record` (not saved).
void set_entry_state(store::ContainerRecord& record, EntryState state);
/// Records what the runtime called the ADD with: its config bytes, CNI_ARGS and pod (not saved).
void record_invocation(store::ContainerRecord& record, const cni::Invocation& inv);
/// The pod an entry belongs to (from the recorded CNI_ARGS); nullopt when it names none.
std::optional<cni::PodRef> entry_pod(const store::ContainerRecord& record);
/// Records the identity of the entry's network namespace (not saved).
void record_netns_identity(store::ContainerRecord& record, const netlink::NetnsIdentity& identity);
/// The identity of the network namespace the entry records; nullopt for an entry written before
/// identities were recorded (or without a namespace identity service). Throws CniError(Decoding)
/// when the recorded value is not a {"dev": n, "ino": n} object.
std::optional<netlink::NetnsIdentity> recorded_netns_identity(const store::ContainerRecord& record);
/// The ADD invocation an entry records (config, CNI_ARGS, container, netns, ifname, CNI_PATH,
/// version), as a hot-plug uses it; nullopt when the entry does not record one. Throws
/// CniError(Decoding) when the recorded config is not valid JSON (a corrupt entry).
std::optional<cni::Invocation> recorded_invocation(const store::ContainerRecord& record);

}  // namespace manifold::engine
