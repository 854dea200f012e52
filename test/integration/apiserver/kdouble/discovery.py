"""Discovery documents, generated from the route table, as a server without aggregated discovery.

Clients such as kubectl learn what a server serves from `/api` (APIVersions), `/apis`
(APIGroupList), `/apis/<group>` (APIGroup) and `/api/v1`, `/apis/<group>/<version>`
(APIResourceList). The double answers the legacy (unaggregated) forms only: kubectl asks for the
aggregated `APIGroupDiscoveryList` first and falls back when the response is plain JSON, exactly as
with a server whose AggregatedDiscoveryEndpoint feature is off. Every advertised resource and verb
comes from the routes, so discovery never promises what the double does not serve, and a group
switched off with `RouteTable.set_disabled_groups` disappears from every document.
"""

from __future__ import annotations

from typing import Optional

from .routes import RouteTable


def document(path: str, routes: RouteTable, server_address: str) -> Optional[dict]:
    """The discovery document served at `path`, or None when it is not a discovery path."""
    parts = [p for p in path.split("/") if p]
    if parts == ["api"]:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": server_address}]}
    if parts == ["apis"]:
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [_group(g, routes) for g in _groups(routes)]}
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in _groups(routes):
        return dict(_group(parts[1], routes), kind="APIGroup", apiVersion="v1")
    if parts == ["api", "v1"]:
        return _resource_list("", "v1", routes)
    if len(parts) == 3 and parts[0] == "apis" and parts[1]:
        return _resource_list(parts[1], parts[2], routes)
    return None


def _groups(routes: RouteTable) -> list[str]:
    return sorted({group for group, _ in routes.group_versions() if group})


def _group(name: str, routes: RouteTable) -> dict:
    versions = [{"groupVersion": f"{name}/{version}", "version": version}
                for group, version in routes.group_versions() if group == name]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def _resource_list(group: str, version: str, routes: RouteTable) -> Optional[dict]:
    entries = routes.resources(group, version)
    if not entries:
        return None
    resources = []
    for res, sub, verbs in entries:
        entry = {"name": f"{res.plural}/{sub}" if sub else res.plural,
                 "singularName": "" if sub else res.singular, "namespaced": res.namespaced,
                 "kind": res.kind, "verbs": verbs}
        if not sub and res.short_names:
            entry["shortNames"] = list(res.short_names)
        if not sub and res.categories:
            entry["categories"] = list(res.categories)
        resources.append(entry)
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": entries[0][0].group_version, "resources": resources}
