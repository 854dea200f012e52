"""The served API as one table: resource paths, the verbs each supports, and their handlers.

A route is keyed by what the request-info resolver computes: group, version, resource,
subresource and whether the path names one object (`…/pods/web`) or the collection (`…/pods`). The
API handler looks a request up here (no route: 404; a route without the verb: 405), and the
discovery documents (`/api/v1`, `/apis/<group>/<version>`) are generated from the same table, so a
verb added here (for example `watch` on the pod collection) is served and advertised at once. A
handler gets the store and the request's `Call` and returns (HTTP status, JSON object).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import k8s_status as st
from .access import RequestInfo
from .store import EVENTS_GROUP, NAD_GROUP, NAD_RESOURCE, Result, Store


@dataclass(frozen=True)
class Resource:
    """A served resource type, with the names discovery advertises for it."""
    group: str
    version: str
    plural: str
    kind: str
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        """`v1` for the core group, else `group/version`."""
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass
class Call:
    """One API request as a handler sees it; `body` is the decoded JSON of a write, else None."""
    info: RequestInfo
    query: str = ""
    body: Any = None
    content_type: str = ""


Handler = Callable[[Store, Call], Result]


@dataclass
class Route:
    """The verbs served on one resource path."""
    resource: Resource
    subresource: str
    named: bool
    verbs: dict[str, Handler] = field(default_factory=dict)


class RouteTable:
    """Every served resource path, looked up by RequestInfo."""

    def __init__(self) -> None:
        self._routes: dict[tuple, Route] = {}

    def add(self, resource: Resource, verbs: dict[str, Handler], *, named: bool,
            subresource: str = "") -> None:
        """Serves `verbs` on a resource's object (named) or collection path; adding verbs to an
        existing path extends it."""
        key = (resource.group, resource.version, resource.plural, subresource, named)
        route = self._routes.setdefault(key, Route(resource, subresource, named))
        route.verbs.update(verbs)

    def find(self, info: RequestInfo) -> Optional[Route]:
        """The route a namespaced resource request addresses, or None (404)."""
        if info.extra_parts or not info.namespace:
            return None
        return self._routes.get((info.group, info.version, info.resource, info.subresource,
                                 bool(info.name)))

    def group_versions(self) -> list[tuple[str, str]]:
        """Every (group, version) with at least one route, sorted."""
        return sorted({(group, version) for group, version, *_ in self._routes})

    def resources(self, group: str, version: str) -> list[tuple[Resource, str, list[str]]]:
        """(resource, subresource, verbs of object and collection paths) of one group version."""
        merged: dict[tuple[str, str], tuple[Resource, set]] = {}
        for route in self._routes.values():
            res = route.resource
            if (res.group, res.version) == (group, version):
                entry = merged.setdefault((res.plural, route.subresource), (res, set()))
                entry[1].update(route.verbs)
        return [(res, sub, sorted(verbs)) for (_, sub), (res, verbs) in sorted(merged.items())]


PODS = Resource("", "v1", "pods", "Pod", "pod", ("po",), ("all",))
CORE_EVENTS = Resource("", "v1", "events", "Event", "event", ("ev",))
EVENTS = Resource(EVENTS_GROUP, "v1", "events", "Event", "event", ("ev",))
NADS = Resource(NAD_GROUP, "v1", NAD_RESOURCE, "NetworkAttachmentDefinition",
                "network-attachment-definition", ("net-attach-def",))


def _get_pod(store: Store, call: Call) -> Result:
    info = call.info
    found = store.get_pod(info.namespace, info.name)
    return (200, found) if found is not None else (404, st.not_found("pods", info.name))


def _update_pod(store: Store, call: Call) -> Result:
    info = call.info
    return store.update_pod(info.namespace, info.name, call.body, info.subresource)


def _patch_pod(store: Store, call: Call) -> Result:
    info = call.info
    return store.patch_pod(info.namespace, info.name, call.body, call.content_type,
                           info.subresource)


def _list_pods(store: Store, call: Call) -> Result:
    return store.list_pods(call.info.namespace)


def _create_event(store: Store, call: Call) -> Result:
    return store.create_event(call.info.namespace, call.body, call.info.group)


def _list_nads(store: Store, call: Call) -> Result:
    return store.list_nads(call.info.namespace)


def _get_nad(store: Store, call: Call) -> Result:
    return store.get_nad(call.info.namespace, call.info.name)


def default_routes() -> RouteTable:
    """The routes of the double: pods (+status), events (both APIs), NADs."""
    table = RouteTable()
    pod_verbs = {"get": _get_pod, "update": _update_pod, "patch": _patch_pod}
    table.add(PODS, pod_verbs, named=True)
    table.add(PODS, pod_verbs, named=True, subresource="status")
    table.add(PODS, {"list": _list_pods}, named=False)
    table.add(CORE_EVENTS, {"create": _create_event}, named=False)
    table.add(EVENTS, {"create": _create_event}, named=False)
    table.add(NADS, {"list": _list_nads}, named=False)
    table.add(NADS, {"get": _get_nad}, named=True)
    return table
