"""AdminClient: the methods that drive an API server double process through its admin API.

Each method is one plain-HTTP call to the admin listener (127.0.0.1, port `info["admin_port"]`)
described in README.md: objects (pods, NADs, DRA's ResourceClaims and ResourceSlices, any kind
of objects.py through add_object), tokens, faults (including the watch stream faults),
the request and connection logs, events, deny rules, RBAC, options, the watch history and the open
watch streams. `ApiServerDouble` inherits them; `info` and `token` are set once the process is
ready.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from typing import Any, Optional, Union

from .dra import CLAIMS, DEFAULT_DEVICE_CLASS, SLICES, claim_object, slice_object
from .netpol import NAMESPACES, POLICIES, namespace_object, policy_object

STATUS_PUT_PATH = r"^/api/v1/namespaces/[^/]+/pods/[^/]+/status$"


class AdminError(RuntimeError):
    """The admin API refused a request (bad arguments or unknown object)."""


class AdminClient:
    """Admin API calls of one double; subclasses provide `info` (the READY JSON) and `token`."""

    info: dict
    token: str

    def _call(self, method: str, path: str, body: Optional[dict] = None,
              timeout: float = 30.0, allow_404: bool = False) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.info["admin_port"], timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = json.loads(resp.read() or b"{}")
        finally:
            conn.close()
        if resp.status == 404 and allow_404:
            return None
        if resp.status != 200:
            raise AdminError(f"{method} {path}: {resp.status} {payload.get('error')}")
        return payload

    def add_pod(self, ns: str, name: str, uid: Optional[str] = None,
                annotations: Optional[dict] = None, labels: Optional[dict] = None,
                spec: Optional[dict] = None, status: Optional[dict] = None,
                node_name: str = "node1", raw: Optional[dict] = None) -> dict:
        """Creates (or replaces) a pod; returns it as the API would. `raw` stores it verbatim."""
        return self._call("POST", "/admin/pods", {
            "namespace": ns, "name": name, "uid": uid, "annotations": annotations,
            "labels": labels, "spec": spec, "status": status, "node_name": node_name,
            "raw": raw})

    def get_pod(self, ns: str, name: str) -> Optional[dict]:
        """Returns the stored pod (for assertions), or None when it does not exist."""
        return self._call("GET", f"/admin/pods/{ns}/{name}", allow_404=True)

    def modify_pod(self, ns: str, name: str, annotations: Optional[dict] = None,
                   labels: Optional[dict] = None, merge: bool = True) -> dict:
        """Changes a pod as another client would (its resourceVersion moves on)."""
        return self._call("PATCH", f"/admin/pods/{ns}/{name}",
                          {"annotations": annotations, "labels": labels, "merge": merge})

    def delete_pod(self, ns: str, name: str) -> bool:
        """Deletes a pod; returns whether it existed."""
        return self._call("DELETE", f"/admin/pods/{ns}/{name}")["deleted"]

    def add_nad(self, ns: str, name: str, config: Union[str, dict, None],
                annotations: Optional[dict] = None, raw_spec: Any = None) -> dict:
        """Creates (or replaces) a NAD. config: JSON text, a dict (serialized), or None for an
        empty spec; raw_spec stores that spec verbatim (e.g. a non-string config)."""
        if isinstance(config, dict):
            config = json.dumps(config)
        return self._call("POST", "/admin/nads", {"namespace": ns, "name": name,
                                                  "config": config, "annotations": annotations,
                                                  "raw_spec": raw_spec})

    def delete_nad(self, ns: str, name: str) -> bool:
        """Deletes a NAD; returns whether it existed."""
        return self._call("DELETE", f"/admin/nads/{ns}/{name}")["deleted"]

    def add_object(self, resource: str, name: str, obj: Optional[dict] = None,
                   namespace: Optional[str] = None, raw: bool = False) -> dict:
        """Creates (or replaces) an object of a generic kind (`resourceclaims`, `resourceslices`)
        as given, spec and status included; returns it as the API would. The double sets kind,
        apiVersion, name, namespace, uid, creationTimestamp (generation) unless given, and a new
        resourceVersion; `raw=True` stores `obj` verbatim (but the resourceVersion)."""
        return self._call("POST", f"/admin/objects/{resource}", {
            "namespace": namespace, "name": name, "object": obj or {}, "raw": raw})

    def get_object(self, resource: str, name: str,
                   namespace: Optional[str] = None) -> Optional[dict]:
        """The stored object of a generic kind, or None."""
        where = f"{namespace}/{name}" if namespace else name
        return self._call("GET", f"/admin/objects/{resource}/{where}", allow_404=True)

    def delete_object(self, resource: str, name: str, namespace: Optional[str] = None) -> bool:
        """Deletes an object of a generic kind; returns whether it existed."""
        where = f"{namespace}/{name}" if namespace else name
        return self._call("DELETE", f"/admin/objects/{resource}/{where}")["deleted"]

    def add_multi_network_policy(self, ns: str, name: str, spec: Optional[dict] = None,
                                 policy_for: Optional[str] = None, annotations: Optional[dict] = None,
                                 raw: Optional[dict] = None) -> dict:
        """Creates (or replaces) a k8s.cni.cncf.io/v1beta1 MultiNetworkPolicy with `spec` (default
        `{"podSelector": {}}`) and the policy-for annotation `policy_for`; `raw` stores that object
        verbatim."""
        obj = raw if raw is not None else policy_object(spec, policy_for, annotations)
        return self.add_object(POLICIES, name, obj, namespace=ns, raw=raw is not None)

    def add_namespace(self, name: str, labels: Optional[dict] = None) -> dict:
        """Creates (or replaces) a Namespace with `labels`."""
        return self.add_object(NAMESPACES, name, namespace_object(labels))

    def add_resource_claim(self, ns: str, name: str, results: Optional[list] = None,
                           requests: Optional[list] = None,
                           device_class: str = DEFAULT_DEVICE_CLASS,
                           spec: Optional[dict] = None, status: Optional[dict] = None,
                           labels: Optional[dict] = None, annotations: Optional[dict] = None,
                           uid: Optional[str] = None, raw: Optional[dict] = None) -> dict:
        """Creates (or replaces) a resource.k8s.io/v1 ResourceClaim. `results`: allocation
        results {request, driver, pool, device} (None: not allocated, `status: {}`);
        `requests`: request names or DeviceRequest dicts (default: the results' requests);
        `spec`/`status` replace the built ones; `raw` stores that object verbatim."""
        obj = raw if raw is not None else claim_object(
            requests, results, device_class, spec, status, labels, annotations, uid)
        return self.add_object(CLAIMS, name, obj, namespace=ns, raw=raw is not None)

    def get_resource_claim(self, ns: str, name: str) -> Optional[dict]:
        """The stored ResourceClaim, or None."""
        return self.get_object(CLAIMS, name, namespace=ns)

    def delete_resource_claim(self, ns: str, name: str) -> bool:
        """Deletes a ResourceClaim; returns whether it existed."""
        return self.delete_object(CLAIMS, name, namespace=ns)

    def add_resource_slice(self, name: str, driver: str = "", node_name: Optional[str] = None,
                           devices: Union[list, dict, None] = None, pool: Optional[str] = None,
                           all_nodes: bool = False, pool_generation: int = 1,
                           slice_count: int = 1, spec: Optional[dict] = None,
                           labels: Optional[dict] = None, raw: Optional[dict] = None) -> dict:
        """Creates (or replaces) a cluster-scoped resource.k8s.io/v1 ResourceSlice. `devices`:
        a list of Device dicts, or {device name: {attribute: value}} where a value is a typed
        dict ({"string": …}, {"version": …}) or a str/int/bool typed for you. `pool` defaults
        to the node name (else the slice name); `spec` replaces the built one; `raw` stores that
        object verbatim."""
        obj = raw if raw is not None else slice_object(
            driver, node_name, pool, devices, all_nodes, pool_generation, slice_count, spec,
            labels, name)
        return self.add_object(SLICES, name, obj, raw=raw is not None)

    def get_resource_slice(self, name: str) -> Optional[dict]:
        """The stored ResourceSlice, or None."""
        return self.get_object(SLICES, name)

    def delete_resource_slice(self, name: str) -> bool:
        """Deletes a ResourceSlice; returns whether it existed."""
        return self.delete_object(SLICES, name)

    def set_tokens(self, tokens: Union[list, dict]) -> None:
        """Replaces the valid bearer tokens (list, or token → user, where a user may be
        {"user": U, "boundPod": {"namespace": N, "name": P, "uid": UID}}: valid only while that pod
        exists, as a projected service-account token). Old tokens then get 401. `self.token`
        becomes the first new token."""
        self._call("PUT", "/admin/tokens", {"tokens": tokens})
        first = next(iter(tokens), None)
        if first is not None:
            self.token = first

    def tokens(self) -> dict:
        """Returns the token → user table."""
        return self._call("GET", "/admin/tokens")["tokens"]

    def add_fault(self, path: str = ".*", action: str = "status", method: Optional[str] = None,
                  **options: Any) -> int:
        """Adds a fault rule (see README.md for actions and options); returns its id."""
        return self._call("POST", "/admin/faults",
                          {"path": path, "action": action, "method": method, **options})["id"]

    def conflict_next(self, count: int = 1, path: str = STATUS_PUT_PATH) -> int:
        """Makes the next `count` pods/status PUTs lose a race with another writer (409)."""
        return self.add_fault(path=path, action="conflict", method="PUT", count=count)

    def remove_fault(self, fault_id: int) -> bool:
        """Removes one fault rule."""
        return self._call("DELETE", f"/admin/faults/{int(fault_id)}")["removed"]

    def faults(self) -> list[dict]:
        """Returns the fault rules with their remaining counts and hits."""
        return self._call("GET", "/admin/faults")["faults"]

    def clear_faults(self) -> None:
        """Removes every fault rule."""
        self._call("DELETE", "/admin/faults")

    def requests(self, method: Optional[str] = None, path: Optional[str] = None) -> list[dict]:
        """Returns the request log in arrival order, optionally filtered by method and by a
        path regex (re.search)."""
        entries = self._call("GET", "/admin/requests")["requests"]
        return [e for e in entries if (method is None or e["method"] == method) and
                (path is None or re.search(path, e["path"]))]

    def clear_requests(self) -> None:
        """Empties the request log (and forgets closed connections)."""
        self._call("DELETE", "/admin/requests")

    def connections(self) -> list[dict]:
        """Returns every connection: id, peer, tls (ok/failed), error, client_cert_cn,
        requests, open."""
        return self._call("GET", "/admin/connections")["connections"]

    def events(self) -> list[dict]:
        """Returns every Event created through the API, oldest first."""
        return self._call("GET", "/admin/events")["events"]

    def clear_events(self) -> None:
        """Forgets the stored events."""
        self._call("DELETE", "/admin/events")

    def deny(self, verb: Optional[str] = None, resource: Optional[str] = None,
             namespace: Optional[str] = None, name: Optional[str] = None,
             user: Optional[str] = None) -> None:
        """Makes matching requests 403 (resource like "pods/status"; None matches anything)."""
        self._call("POST", "/admin/deny", {"verb": verb, "resource": resource,
                                           "namespace": namespace, "name": name, "user": user})

    def clear_deny(self) -> None:
        """Removes every deny rule."""
        self._call("DELETE", "/admin/deny")

    def set_rbac(self, rules: Union[str, list, None]) -> None:
        """Enforces an RBAC allow-list: "manifold" (the shipped ClusterRole), a list of
        ClusterRole rules, or None to allow everything."""
        self._call("PUT", "/admin/rbac", {"rules": rules})

    def set_options(self, strict_resource_version: Optional[bool] = None,
                    bookmark_interval: Optional[float] = None,
                    watch_timeout: Optional[float] = None,
                    watch_history: Optional[int] = None,
                    disabled_groups: Optional[list[str]] = None,
                    tls_max_version: Optional[str] = None) -> dict:
        """Changes the options given (None: unchanged) and returns all of them.
        strict_resource_version=False accepts updates without resourceVersion, as the real
        server does for pods (the default, True, answers them with 409); bookmark_interval:
        seconds between BOOKMARKs on watches that allow them (default 60, live); watch_timeout:
        seconds a watch without timeoutSeconds lasts (0: random 30-60 min, the default);
        watch_history: pod events kept for watches from an older resourceVersion (1000);
        disabled_groups: API groups served as absent (404 on their paths, not in discovery),
        e.g. ["resource.k8s.io"] for a cluster before 1.34; [] serves them all again;
        tls_max_version: the newest TLS version new connections negotiate, "1.3" (the default)
        or "1.2"."""
        given = {"strict_resource_version": strict_resource_version,
                 "bookmark_interval": bookmark_interval, "watch_timeout": watch_timeout,
                 "watch_history": watch_history, "disabled_groups": disabled_groups,
                 "tls_max_version": tls_max_version}
        return self._call("PUT", "/admin/options",
                          {k: v for k, v in given.items() if v is not None})

    def options(self) -> dict:
        """Returns the options (see set_options)."""
        return self._call("GET", "/admin/options")

    def compact(self) -> str:
        """Drops the whole pod watch history, as an etcd compaction at the current
        resourceVersion: a watch from any older resourceVersion then gets the 410 Expired ERROR
        event. Returns the current resourceVersion (a watch from it still works)."""
        return self._call("POST", "/admin/compact")["resourceVersion"]

    def watch_history(self) -> dict:
        """The pod watch history: floor (oldest resourceVersion a watch may start from), limit,
        and the kept events as {type, resourceVersion, object: "ns/name"}."""
        return self._call("GET", "/admin/watch-history")

    def watches(self) -> list[dict]:
        """The open watch streams: id, seq (request log), path, query, user, namespace,
        fieldSelector, labelSelector, allowWatchBookmarks, started, events_sent,
        bookmarks_sent, queued."""
        return self._call("GET", "/admin/watches")["watches"]

    def wait_for_watches(self, count: int = 1, path: Optional[str] = None,
                         query: Optional[str] = None, timeout: float = 30.0) -> list[dict]:
        """Waits until at least `count` watch streams whose path and query match the regexes
        (re.search) are open, and returns them; AdminError after `timeout` seconds (a guard:
        the wait ends as soon as the streams are there)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [w for w in self.watches()
                     if (path is None or re.search(path, w["path"])) and
                     (query is None or re.search(query, w["query"]))]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AdminError(f"{len(found)} of {count} watch streams open after "
                                 f"{timeout}s (path={path!r}, query={query!r})")
            time.sleep(0.02)
