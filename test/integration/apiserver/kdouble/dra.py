"""Dynamic Resource Allocation objects of `resource.k8s.io/v1` (Kubernetes ≥ 1.34).

Two kinds, served by objects.py's generic registry with the rules of their real strategies:

- ResourceClaim (namespaced, `resourceclaims`, ResourceClaimList) with the `resourceclaims/status`
  subresource: status reset on create, kept by updates of the claim (whose spec is immutable), and
  the only thing a status update changes. Field selectors: `metadata.name`, `metadata.namespace`
  (the default conversion; anything else is `"<f>" is not a known field selector: only
  "metadata.name", "metadata.namespace"`).
- ResourceSlice (cluster-scoped, `resourceslices`, ResourceSliceList): generation 1 on create, +1
  when the spec changes. Field selectors: `metadata.name`, `spec.nodeName` ("" when unset, e.g.
  with `allNodes`), `spec.driver`; anything else (also `spec.pool.name`) is the real 400
  `field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: <f>`.

`claim_object` and `slice_object` build the objects tests seed (admin `add_resource_claim`,
`add_resource_slice`): a claim's `spec.devices.requests[]` and
`status.allocation.devices.results[]` ({request, driver, pool, device}); a slice's `spec.driver`,
`spec.nodeName` or `spec.allNodes`, `spec.pool` {name, generation, resourceSliceCount} and
`spec.devices[]` {name, attributes: {"<key>": {"string"|"int"|"bool"|"version": v}}}. The group
can be switched off (`set_options(disabled_groups=["resource.k8s.io"])`): 404 everywhere, as on a
cluster before 1.34.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from .list_options import FieldLabels
from .objects import Kind, object_routes
from .routes import Resource, RouteTable

GROUP = "resource.k8s.io"
VERSION = "v1"
CLAIMS = "resourceclaims"
SLICES = "resourceslices"
DEFAULT_DEVICE_CLASS = "device.example.com"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _meta_field(key: str) -> Any:
    return lambda obj: _text(_dict(obj.get("metadata")).get(key))


def _spec_field(key: str) -> Any:
    return lambda obj: _text(_dict(obj.get("spec")).get(key))


CLAIM_LABELS = FieldLabels(
    {"metadata.name": _meta_field("name"), "metadata.namespace": _meta_field("namespace")},
    lambda label: f'"{label}" is not a known field selector: only "metadata.name", '
                  f'"metadata.namespace"')
SLICE_LABELS = FieldLabels(
    {"metadata.name": _meta_field("name"), "spec.nodeName": _spec_field("nodeName"),
     "spec.driver": _spec_field("driver")},
    lambda label: f"field label not supported for {GROUP}/{VERSION}, Kind=ResourceSlice: "
                  f"{label}")

RESOURCE_CLAIM = Kind(Resource(GROUP, VERSION, CLAIMS, "ResourceClaim", "resourceclaim"),
                      "ResourceClaimList", CLAIM_LABELS, status=True, immutable_spec=True)
RESOURCE_SLICE = Kind(Resource(GROUP, VERSION, SLICES, "ResourceSlice", "resourceslice",
                               namespaced=False),
                      "ResourceSliceList", SLICE_LABELS, generation=True)


def add_dra_routes(table: RouteTable) -> None:
    """Serves resource.k8s.io/v1 resourceclaims (+status) and resourceslices."""
    object_routes(table, RESOURCE_CLAIM)
    object_routes(table, RESOURCE_SLICE)


# ---- objects for tests to seed ---------------------------------------------------------------

def attribute(value: Any) -> dict:
    """A DeviceAttribute: a typed dict as given ({"string": …}, {"version": …}), else typed from
    the Python value (bool → bool, int → int, str → string)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"string": value}
    raise ValueError(f"a device attribute is a str, int, bool or typed dict, not {value!r}")


def devices_list(devices: Union[list, dict, None]) -> list:
    """`spec.devices`: a list is taken as given; a dict maps each device name to its attributes
    (values as for `attribute`)."""
    if devices is None:
        return []
    if isinstance(devices, list):
        return [dict(d) for d in devices]
    out = []
    for name, attributes in devices.items():
        device: dict = {"name": name}
        if attributes:
            device["attributes"] = {k: attribute(v) for k, v in attributes.items()}
        out.append(device)
    return out


def claim_object(requests: Optional[list] = None, results: Optional[list] = None,
                 device_class: str = DEFAULT_DEVICE_CLASS, spec: Optional[dict] = None,
                 status: Optional[dict] = None, labels: Optional[dict] = None,
                 annotations: Optional[dict] = None, uid: Optional[str] = None) -> dict:
    """A ResourceClaim (without name and namespace, which the store sets). `requests`: names
    (str) or DeviceRequest dicts; by default the distinct `request` of the results, else one
    `req-0`. `results`: DeviceRequestAllocationResult dicts {request, driver, pool, device};
    given (even empty) they make `status.allocation.devices.results`, None leaves the claim
    pending (`status: {}`). `spec`/`status` replace what the other arguments would build."""
    if requests is None:
        requests = list(dict.fromkeys(_text(_dict(r).get("request")) for r in results or []))
        requests = [r for r in requests if r] or ["req-0"]
    built_spec = {"devices": {"requests": [
        r if isinstance(r, dict) else
        {"name": r, "exactly": {"deviceClassName": device_class,
                                "allocationMode": "ExactCount", "count": 1}}
        for r in requests]}}
    built_status = {} if results is None else \
        {"allocation": {"devices": {"results": [dict(r) for r in results]}}}
    meta: dict = {}
    if uid:
        meta["uid"] = uid
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"metadata": meta, "spec": spec if spec is not None else built_spec,
            "status": status if status is not None else built_status}


def slice_object(driver: str = "", node_name: Optional[str] = None,
                 pool: Optional[str] = None, devices: Union[list, dict, None] = None,
                 all_nodes: bool = False, pool_generation: int = 1, slice_count: int = 1,
                 spec: Optional[dict] = None, labels: Optional[dict] = None,
                 name: str = "") -> dict:
    """A ResourceSlice (without name, which the store sets): `spec.driver`, `spec.nodeName`
    (or `spec.allNodes: true`; the real server wants exactly one), `spec.pool` (name: `pool`,
    else the node name, else the slice's `name`) and `spec.devices` (see devices_list). `spec`
    replaces what the other arguments would build."""
    if spec is None:
        spec = {"driver": driver}
        if node_name is not None:
            spec["nodeName"] = node_name
        if all_nodes:
            spec["allNodes"] = True
        spec["pool"] = {"name": pool or node_name or name, "generation": pool_generation,
                        "resourceSliceCount": slice_count}
        spec["devices"] = devices_list(devices)
    meta = {"labels": dict(labels)} if labels else {}
    return {"metadata": meta, "spec": spec}
