// What manifold writes back to Kubernetes after an ADD: the k8s.v1.cni.cncf.io/network-status
// annotation (one entry per attachment, Multus's exact format, via PUT pods/status reusing the
// pod's resourceVersion and re-GET + retry only on 409) and one AddedInterface Event per
// attachment. The events are pipelined behind the status PUT, in its round trip (alone in a batch
// when no status is written): best effort, sent once each, never retried and never failing the ADD;
// failures are logged in one warning.
#pragma once

#include <vector>

#include "cni/cni_args.h"
#include "cni/netconf.h"
#include "cni/skel.h"
#include "cni/result.h"
#include "k8s/network_status.h"
#include "k8s/pod.h"
#include "engine/kube_access.h"
#include "store/record.h"
#include "util/file_reader.h"

namespace manifold::engine {

/// The network-status entries of a container's attachments, in order. Device info is read from
/// each attachment's device-info file when it exists.
std::vector<k8s::StatusInput> status_inputs(const store::ContainerRecord& record, util::FileReader& files);

/// The same from results already decoded: `results[i]` is the decoded result of
/// `record.attachments[i]` (an ADD decodes each result once and reuses it here).
std::vector<k8s::StatusInput> status_inputs(const store::ContainerRecord& record,
                                            const std::vector<cni::Result>& results, util::FileReader& files);

/// After an ADD or a hot-plug: writes network-status (not for pods of systemNamespaces, as in Multus)
/// and sends the AddedInterface events (for all pods). `results[i]` is the decoded result of
/// `record.attachments[i]`; `pod` is the pod as fetched at the start.
void publish_status(KubeAccess& kube, util::FileReader& files, const cni::MetaConfig& config,
                    const cni::Invocation& inv, const k8s::Pod& pod, const store::ContainerRecord& record,
                    const std::vector<cni::Result>& results);

/// Writes the network-status annotation. `pod` is the pod as fetched at the start of the ADD.
/// `events` are POSTed behind the first PUT in the same batch (once each; failures only logged).
void write_network_status(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod, const std::string& value,
                          const std::vector<Json>& events = {});

/// Sends one AddedInterface Event per attachment, all in one batch, one attempt each; failures are
/// logged (Events are best effort and never fail or delay the ADD).
void send_added_events(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod,
                       const store::ContainerRecord& record);

/// An Event about the pod with `reason` and `type` ("Normal", "Warning"), its name and message empty.
Json pod_event(const cni::PodRef& ref, const k8s::Pod& pod, const std::string& reason, const std::string& type);

/// A unique Event name for the pod: "<pod>.<hex nanoseconds + n>".
std::string event_name(const cni::PodRef& ref, std::size_t n);

/// Sends one Event about the pod (`type` "Normal" or "Warning"; `n` keeps the names of events sent
/// in the same nanosecond apart), one attempt. Returns false when it failed, which is only logged.
bool send_event(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod, const std::string& reason,
                const std::string& type, const std::string& message, std::size_t n);
/// Sends one Warning Event about the pod (e.g. NoNetworkFound), one attempt, failure only logged.
void send_warning_event(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod, const std::string& reason,
                        const std::string& message);

/// The same from results already decoded (`results[i]` belongs to `record.attachments[i]`).
void send_added_events(KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod,
                       const store::ContainerRecord& record, const std::vector<cni::Result>& results);

}  // namespace manifold::engine
