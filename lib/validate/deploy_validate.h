// Offline checks of manifold's own deployment for `manifold validate`: its ClusterRole (every grant
// the CNI plugin and the node agent need) and the DaemonSet running `manifold agent` (node name,
// host paths mounted at the same paths, namespace propagation, privileges), so that an operator who
// edits the shipped manifests learns before applying them that hot-plug or the CNI binary would
// break. Called by validate_manifest_text (validate/manifest_validate.h) for those kinds.
#pragma once

#include "cni/config_validate.h"
#include "util/json.h"

namespace manifold::validate {

/// True for the ClusterRoles validate_cluster_role checks: those named "manifold…" (metadata.name
/// starts with "manifold") or labelled app=manifold. Other ClusterRoles are left unchecked.
bool is_manifold_cluster_role(const Json& role);

/// Validates manifold's ClusterRole. Each grant the plugin or the node agent needs and no rule
/// gives is an error at "$.rules" naming the resource, the verbs and the user, e.g.
/// "pods list/watch: not granted; needed for the node agent's pod watch (hot-plug)". Needed: core
/// pods get, list, watch; pods/status update; events create; k8s.cni.cncf.io
/// network-attachment-definitions get; and, as warnings when missing (only some pods need them),
/// multi-networkpolicies list and watch, namespaces and network-attachment-definitions list and
/// watch, resource.k8s.io resourceclaims
/// get and resourceslices list. "*" in
/// apiGroups, resources or verbs matches anything ("*/status" any status subresource); a rule with
/// resourceNames satisfies nothing (manifold reads any pod). A rule granting more than that — a
/// write verb on pods (the pod itself, not its status), patch on pods/status, a write verb on NADs
/// or DRA objects, anything on secrets — gets a warning at "$.rules[i]". A role with an
/// aggregationRule is not checked.
void validate_cluster_role(const Json& role, cni::Problems& out);

/// Validates a DaemonSet's pod template when a container runs `manifold agent` (in command + args,
/// "agent" right after an element ending in "manifold"). For each such container: NODE_NAME from
/// fieldRef.fieldPath spec.nodeName (or --node-name); a hostPath volumeMount covering the cache
/// (--cni-dir, default /var/lib/cni/manifold), the plugin directory (--bin-dir, /opt/cni/bin) and
/// the config directory (--conf-dir, /etc/cni/net.d), and /run/netns or /var/run/netns with
/// mountPropagation HostToContainer or Bidirectional; all but the config directory mounted at the
/// host's path (the cache records host paths); privileged, or NET_ADMIN and SYS_ADMIN added. For
/// the pod: hostNetwork true, and serviceAccountName set (else a warning). A container running
/// `manifold install` instead gets a warning that hot-plug is off; other DaemonSets get nothing.
void validate_agent_daemonset(const Json& daemonset, cni::Problems& out);

}  // namespace manifold::validate
