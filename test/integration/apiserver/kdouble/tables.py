"""Server-side printing: an object (or a list of them) as a `Table`, for `kubectl get`.

`kubectl get` without `-o` asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the
columns the server chose. Pods get the columns kube-apiserver prints (Name, Ready, Status,
Restarts, Age; IP and Node at priority 1, shown by `-o wide`), ResourceClaims Name, State
(`pending`, `allocated,reserved`, …), Age, and ResourceSlices Name, Node, Driver, Pool, Age, as
kube-apiserver's printers do; other resources get Name and Age, like a CustomResourceDefinition
without printer columns. Each row carries the object's metadata as
a PartialObjectMetadata, as with the default `includeObject=Metadata`. Hostile stored objects
(wrong types) print as empty cells, never as an error.
"""

from __future__ import annotations

import calendar
import time
from typing import Any

_NAME = {"name": "Name", "type": "string", "format": "name", "priority": 0,
         "description": "Name must be unique within a namespace."}
_AGE = {"name": "Age", "type": "string", "format": "", "priority": 0,
        "description": "Time since the object was created."}
_POD_COLUMNS = [
    _NAME,
    {"name": "Ready", "type": "string", "format": "", "priority": 0,
     "description": "Ready containers / containers."},
    {"name": "Status", "type": "string", "format": "", "priority": 0,
     "description": "The pod's phase, or the reason it is in it."},
    {"name": "Restarts", "type": "integer", "format": "", "priority": 0,
     "description": "Container restarts."},
    _AGE,
    {"name": "IP", "type": "string", "format": "", "priority": 1,
     "description": "The pod's IP address."},
    {"name": "Node", "type": "string", "format": "", "priority": 1,
     "description": "The node the pod is bound to."},
]


_CLAIM_COLUMNS = [
    _NAME,
    {"name": "State", "type": "string", "format": "", "priority": 0,
     "description": "A summary of the current state (allocated, pending, reserved, etc.)."},
    _AGE,
]
_SLICE_COLUMNS = [_NAME] + [
    {"name": name, "type": "string", "format": "", "priority": 0, "description": text}
    for name, text in (("Node", "The node which provides the resources in this pool."),
                       ("Driver", "The DRA driver providing the capacity information."),
                       ("Pool", "The name of the resource pool."))] + [_AGE]


def to_table(obj: dict, api_version: str, resource: str) -> dict:
    """The Table for one object or a `…List` of them."""
    items = obj.get("items") if str(obj.get("kind", "")).endswith("List") else [obj]
    items = items if isinstance(items, list) else []
    columns, cells = _PRINTERS.get(resource, ([_NAME, _AGE], _cells))
    rows = [{"cells": cells(item),
             "object": {"kind": "PartialObjectMetadata", "apiVersion": api_version,
                        "metadata": _dict(_dict(item).get("metadata"))}}
            for item in items]
    rv = _dict(obj.get("metadata")).get("resourceVersion", "")
    return {"kind": "Table", "apiVersion": api_version, "metadata": {"resourceVersion": rv},
            "columnDefinitions": columns, "rows": rows}


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _cells(item: Any) -> list:
    meta = _dict(_dict(item).get("metadata"))
    return [str(meta.get("name", "")), human_age(meta.get("creationTimestamp"))]


def _pod_cells(item: Any) -> list:
    pod = _dict(item)
    spec, status = _dict(pod.get("spec")), _dict(pod.get("status"))
    statuses = [_dict(s) for s in _list(status.get("containerStatuses"))]
    ready = sum(1 for s in statuses if s.get("ready") is True)
    restarts = sum(s.get("restartCount", 0) for s in statuses
                   if isinstance(s.get("restartCount"), int))
    name, age = _cells(pod)
    return [name, f"{ready}/{len(_list(spec.get('containers')))}",
            str(status.get("reason") or status.get("phase") or "Unknown"), restarts, age,
            str(status.get("podIP") or "<none>"), str(spec.get("nodeName") or "<none>")]


def _claim_cells(item: Any) -> list:
    claim = _dict(item)
    status = _dict(claim.get("status"))
    deleted = bool(_dict(claim.get("metadata")).get("deletionTimestamp"))
    states = ["deleted"] if deleted else []
    if not status.get("allocation"):
        states += [] if deleted else ["pending"]
    else:
        states.append("allocated")
        if _list(status.get("reservedFor")):
            states.append("reserved")
        elif deleted:
            states.append("deallocating")
    name, age = _cells(claim)
    return [name, ",".join(states), age]


def _slice_cells(item: Any) -> list:
    spec = _dict(_dict(item).get("spec"))
    name, age = _cells(item)
    return [name, str(spec.get("nodeName") or ""), str(spec.get("driver") or ""),
            str(_dict(spec.get("pool")).get("name") or ""), age]


_PRINTERS = {"pods": (_POD_COLUMNS, _pod_cells),
             "resourceclaims": (_CLAIM_COLUMNS, _claim_cells),
             "resourceslices": (_SLICE_COLUMNS, _slice_cells)}


def human_age(timestamp: Any) -> str:
    """Time since an RFC 3339 timestamp, the way kubectl prints ages (`42s`, `3m5s`, `7h`)."""
    try:
        created = calendar.timegm(time.strptime(str(timestamp), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return "<unknown>"
    seconds = max(0, int(time.time() - created))
    minutes, hours = seconds // 60, seconds // 3600
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"
