"""The served API as one table: resource paths, the verbs each supports, and their handlers.

A route is keyed by what the request-info resolver computes: group, version, resource,
subresource and whether the path names one object (`…/pods/web`) or the collection (`…/pods`). The
API handler looks a request up here (no route: 404; a route without the verb: 405), and the
discovery documents (`/api/v1`, `/apis/<group>/<version>`) are generated from the same table, so a
verb added here is served and advertised at once. A collection route may also be served across
namespaces (`/api/v1/pods`); a cluster-scoped resource (`Resource.namespaced` False, e.g.
ResourceSlice) is served only without `/namespaces/{ns}`. A whole API group can be switched off at
runtime (`disabled_groups`): its paths are then 404 and discovery no longer lists it, as on a
cluster that does not serve it (resource.k8s.io/v1 before Kubernetes 1.34, a missing CRD). A
handler gets the store and the request's `Call` and returns (HTTP status, JSON object); a `watch`
handler returns (200, PodWatcher), which the API handler streams. The generic kinds of objects.py
(DRA's, dra.py) add their routes with `objects.object_routes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from . import k8s_status as st
from .access import RequestInfo
from .list_options import FieldLabels, FieldTerm, ListOptions, OptionError, parse_list_options
from .store import EVENTS_GROUP, NAD_GROUP, NAD_KEY, NAD_RESOURCE, Result, Store
from .watch import PodWatcher


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
    namespaced: bool = True

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
    user: Optional[str] = None


Handler = Callable[[Store, Call], tuple[int, Any]]


@dataclass
class Route:
    """The verbs served on one resource path."""
    resource: Resource
    subresource: str
    named: bool
    verbs: dict[str, Handler] = field(default_factory=dict)
    all_namespaces: bool = False


class RouteTable:
    """Every served resource path, looked up by RequestInfo."""

    def __init__(self) -> None:
        self._routes: dict[tuple, Route] = {}
        self.disabled_groups: frozenset[str] = frozenset()

    def set_disabled_groups(self, groups: Iterable[str]) -> None:
        """Makes these API groups absent (404, not in discovery); an empty list restores all."""
        self.disabled_groups = frozenset(groups)

    def add(self, resource: Resource, verbs: dict[str, Handler], *, named: bool,
            subresource: str = "", all_namespaces: bool = False) -> None:
        """Serves `verbs` on a resource's object (named) or collection path; adding verbs to an
        existing path extends it. `all_namespaces` also serves a collection path without
        `/namespaces/{ns}` (the handler then sees an empty namespace)."""
        key = (resource.group, resource.version, resource.plural, subresource, named)
        route = self._routes.setdefault(key, Route(resource, subresource, named))
        route.verbs.update(verbs)
        route.all_namespaces = route.all_namespaces or (all_namespaces and not named)

    def find(self, info: RequestInfo) -> Optional[Route]:
        """The route a resource request addresses, or None (404)."""
        if info.extra_parts or info.group in self.disabled_groups:
            return None
        route = self._routes.get((info.group, info.version, info.resource, info.subresource,
                                  bool(info.name)))
        if route is None:
            return None
        if not route.resource.namespaced:
            # `/api/v1/namespaces/{name}` addresses the Namespace object: the real RequestInfo
            # carries its name as the request's namespace too.
            own = info.group == "" and info.resource == "namespaces" and info.namespace == info.name
            return None if info.namespace and not own else route
        if not info.namespace and not route.all_namespaces:
            return None
        return route

    def group_versions(self) -> list[tuple[str, str]]:
        """Every (group, version) with at least one route (and not disabled), sorted."""
        return sorted({(group, version) for group, version, *_ in self._routes
                       if group not in self.disabled_groups})

    def resources(self, group: str, version: str) -> list[tuple[Resource, str, list[str]]]:
        """(resource, subresource, verbs of object and collection paths) of one group version."""
        merged: dict[tuple[str, str], tuple[Resource, set]] = {}
        if group in self.disabled_groups:
            return []
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


def _options(call: Call, watch: bool) -> ListOptions:
    return parse_list_options(call.query, call.info.namespace, watch)


def _list_pods(store: Store, call: Call) -> Result:
    try:
        return store.list_pods(_options(call, watch=False))
    except OptionError as err:
        return err.code, err.status


def _watch_pods(store: Store, call: Call) -> tuple[int, Any]:
    try:
        opts = _options(call, watch=True)
    except OptionError as err:
        return err.code, err.status
    if call.info.name:
        # A watch of one pod (…/pods/{name}?watch=1) is a collection watch on metadata.name.
        opts.fields += (FieldTerm("metadata.name", call.info.name, True),)
    return 200, store.open_watch(PodWatcher(opts, path=call.info.path, query=call.query,
                                            user=call.user))


def _create_event(store: Store, call: Call) -> Result:
    return store.create_event(call.info.namespace, call.body, call.info.group)


def _list_nads(store: Store, call: Call) -> Result:
    return store.list_nads(call.info.namespace)


def _nad_meta(key: str) -> Callable[[dict], str]:
    return lambda obj: str((obj.get("metadata") or {}).get(key, ""))


NAD_LABELS = FieldLabels({"metadata.name": _nad_meta("name"), "metadata.namespace": _nad_meta("namespace")},
                         lambda label: f'"{label}" is not a known field selector: only "metadata.name", '
                                       f'"metadata.namespace"')


def _watch_nads(store: Store, call: Call) -> tuple[int, Any]:
    try:
        opts = parse_list_options(call.query, call.info.namespace, True, NAD_LABELS)
    except OptionError as err:
        return err.code, err.status
    return 200, store.open_nad_watch(PodWatcher(opts, path=call.info.path, query=call.query, user=call.user,
                                                kind=NAD_KEY))


def _get_nad(store: Store, call: Call) -> Result:
    return store.get_nad(call.info.namespace, call.info.name)


def default_routes() -> RouteTable:
    """The routes of the double: pods (+status), events (both APIs), NADs, DRA's
    ResourceClaims (+status) and ResourceSlices (dra.py), MultiNetworkPolicies and Namespaces
    (netpol.py)."""
    from .dra import add_dra_routes  # late import: dra.py builds on this module's types
    from .netpol import add_policy_routes
    table = RouteTable()
    pod_verbs = {"get": _get_pod, "update": _update_pod, "patch": _patch_pod}
    table.add(PODS, dict(pod_verbs, watch=_watch_pods), named=True)
    table.add(PODS, pod_verbs, named=True, subresource="status")
    table.add(PODS, {"list": _list_pods, "watch": _watch_pods}, named=False, all_namespaces=True)
    table.add(CORE_EVENTS, {"create": _create_event}, named=False)
    table.add(EVENTS, {"create": _create_event}, named=False)
    table.add(NADS, {"list": _list_nads, "watch": _watch_nads}, named=False, all_namespaces=True)
    table.add(NADS, {"get": _get_nad}, named=True)
    add_dra_routes(table)
    add_policy_routes(table)
    return table
