"""What MultiNetworkPolicy enforcement reads: MultiNetworkPolicies (`k8s.cni.cncf.io/v1beta1`,
namespaced, plural `multi-networkpolicies` as the upstream CRD names it) and Namespaces (core `v1`,
cluster-scoped), both served by objects.py's generic registry: GET, LIST (a namespace or all),
POST, PUT, PATCH and DELETE, with the default conversion's field selectors (`metadata.name`,
`metadata.namespace` for policies; `metadata.name`, `status.phase` for namespaces).

`policy_object` builds the object tests seed (admin `add_multi_network_policy`): the spec as given
and the `k8s.v1.cni.cncf.io/policy-for` annotation.
"""

from __future__ import annotations

from typing import Any, Optional

from .list_options import FieldLabels
from .objects import Kind, object_routes
from .routes import Resource, RouteTable

GROUP = "k8s.cni.cncf.io"
POLICIES = "multi-networkpolicies"
NAMESPACES = "namespaces"
POLICY_FOR = "k8s.v1.cni.cncf.io/policy-for"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _meta(key: str) -> Any:
    return lambda obj: _text(_dict(obj.get("metadata")).get(key))


POLICY_LABELS = FieldLabels(
    {"metadata.name": _meta("name"), "metadata.namespace": _meta("namespace")},
    lambda label: f'"{label}" is not a known field selector: only "metadata.name", "metadata.namespace"')
NAMESPACE_LABELS = FieldLabels(
    {"metadata.name": _meta("name"),
     "status.phase": lambda obj: _text(_dict(obj.get("status")).get("phase"))},
    lambda label: f"field label not supported: {label}")

MULTI_NETWORK_POLICY = Kind(Resource(GROUP, "v1beta1", POLICIES, "MultiNetworkPolicy", "multi-networkpolicy",
                                     short_names=("multi-policy",)),
                            "MultiNetworkPolicyList", POLICY_LABELS)
NAMESPACE = Kind(Resource("", "v1", NAMESPACES, "Namespace", "namespace", short_names=("ns",), namespaced=False),
                 "NamespaceList", NAMESPACE_LABELS)


def add_policy_routes(table: RouteTable) -> None:
    """Serves k8s.cni.cncf.io/v1beta1 multi-networkpolicies and v1 namespaces."""
    object_routes(table, MULTI_NETWORK_POLICY)
    object_routes(table, NAMESPACE)


def policy_object(spec: Optional[dict] = None, policy_for: Optional[str] = None,
                  annotations: Optional[dict] = None, labels: Optional[dict] = None) -> dict:
    """A MultiNetworkPolicy (without name and namespace, which the store sets): `spec` as given
    (default: `{"podSelector": {}}`), `policy_for` as the policy-for annotation (None: none)."""
    metadata: dict = {}
    notes = dict(annotations or {})
    if policy_for is not None:
        notes[POLICY_FOR] = policy_for
    if notes:
        metadata["annotations"] = notes
    if labels:
        metadata["labels"] = dict(labels)
    return {"metadata": metadata, "spec": spec if spec is not None else {"podSelector": {}}}


def namespace_object(labels: Optional[dict] = None) -> dict:
    """A Namespace (without its name) with `labels` and phase Active."""
    return {"metadata": {"labels": dict(labels or {})}, "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}}
