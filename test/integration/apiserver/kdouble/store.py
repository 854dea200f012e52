"""The double's object store: pods, NetworkAttachmentDefinitions and events.

Objects are kept as the JSON the real API server would return, under one lock, with one
cluster-wide resourceVersion counter (as etcd's revision). Updates follow the real server's rules
for the paths manifold uses: name/namespace checks (400), UID precondition and resourceVersion
optimistic concurrency (409), decoding errors worded like Go's JSON decoder (400), and annotation
validation (422, including the 256 KiB total size limit). A pods/status update stores the body's
annotations, labels and status and keeps the spec, as podStatusStrategy does; a PATCH is applied to
the stored pod and then checked and stored like an update. Every method returns deep copies, so
callers can never mutate stored state by accident.

Every pod change, whoever makes it (admin calls, PUT/PATCH through the API), goes through
`_commit_pod`, which records the watch event (watch.py) under the same lock, so LIST and WATCH
(`list_pods`, `open_watch`) see one consistent sequence of resourceVersions. The lock is an RLock
inside a Condition that wakes the watch streams.
"""

from __future__ import annotations

import copy
import re
import secrets
import threading
import time
import uuid
from typing import Any, Optional

from . import k8s_status as st
from .list_options import ListOptions, OptionError
from .paging import page
from .patch import PatchError, apply_patch
from .validation import DecodeError, check_object, validate_annotations
from .watch import (ADDED, DELETED, MODIFIED, PodEvent, PodWatcher, WatchRegistry,
                    with_resource_version)

NAD_GROUP = "k8s.cni.cncf.io"
NAD_RESOURCE = "network-attachment-definitions"
NAD_KEY = (NAD_GROUP, NAD_RESOURCE)  # the (group, plural) of NAD watch events
EVENTS_GROUP = "events.k8s.io"
_RV_RE = re.compile(r"^[0-9]+$")

Result = tuple[int, dict]


def _list_item(pod: dict) -> dict:
    item = copy.deepcopy(pod)
    if isinstance(item, dict):
        item.pop("kind", None)
        item.pop("apiVersion", None)
    return item


def now_rfc3339() -> str:
    """Returns the current UTC time in the format Kubernetes uses for timestamps."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Store:
    """Thread-safe in-memory cluster state with a monotonically increasing resourceVersion."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._rv = 1000
        self._watch = WatchRegistry(self._cond, self._rv)
        self._pods: dict[tuple[str, str], dict] = {}
        self._sorted_keys: Optional[list] = None  # the pods' keys in order, until one comes or goes
        self._nads: dict[tuple[str, str], dict] = {}
        self._events: dict[tuple[str, str, str], dict] = {}
        self._event_order: list[tuple[str, str, str]] = []
        self.strict_resource_version = True

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def current_rv(self) -> str:
        """Returns the latest resourceVersion handed out (a List's metadata.resourceVersion)."""
        with self._lock:
            return str(self._rv)

    # ---- pods ------------------------------------------------------------------------------

    def _commit_pod(self, key: tuple[str, str], pod: Optional[dict],
                    prev: Optional[dict]) -> None:
        """The one place pods change: stores `pod` (None: removes the pod) and records the watch
        event. The caller holds the lock, has already given `pod` its new resourceVersion (the
        latest handed out) and passes `prev`, a copy of the state before (None: a new pod)."""
        if pod is None or prev is None:
            self._sorted_keys = None
        if pod is None:
            if prev is None:
                return
            self._pods.pop(key, None)
            rv = int(self._next_rv())
            event = PodEvent(rv, DELETED, key[0], with_resource_version(prev, rv), prev)
        else:
            self._pods[key] = pod
            event = PodEvent(self._rv, ADDED if prev is None else MODIFIED, key[0],
                             copy.deepcopy(pod), prev)
        self._watch.record(event)

    def put_pod(self, ns: str, name: str, uid: Optional[str] = None,
                annotations: Optional[dict] = None, labels: Optional[dict] = None,
                spec: Optional[dict] = None, status: Optional[dict] = None,
                node_name: str = "node1", raw: Optional[dict] = None) -> dict:
        """Creates or replaces a pod. `raw` stores that exact object (for hostile-data tests)."""
        with self._lock:
            if raw is not None:
                pod = copy.deepcopy(raw)
                rv = self._next_rv()
                if isinstance(pod.get("metadata"), dict):
                    pod["metadata"]["resourceVersion"] = rv
            else:
                meta: dict = {"name": name, "namespace": ns, "uid": uid or str(uuid.uuid4()),
                              "resourceVersion": self._next_rv(),
                              "creationTimestamp": now_rfc3339()}
                if labels:
                    meta["labels"] = dict(labels)
                if annotations:
                    meta["annotations"] = dict(annotations)
                pod = {"kind": "Pod", "apiVersion": "v1", "metadata": meta,
                       "spec": copy.deepcopy(spec) if spec is not None else {
                           "containers": [{"name": "app", "image": "busybox"}],
                           "nodeName": node_name},
                       "status": copy.deepcopy(status) if status is not None else {
                           "phase": "Pending"}}
            self._commit_pod((ns, name), pod, copy.deepcopy(self._pods.get((ns, name))))
            return copy.deepcopy(pod)

    def get_pod(self, ns: str, name: str) -> Optional[dict]:
        """Returns the stored pod or None."""
        with self._lock:
            pod = self._pods.get((ns, name))
            return copy.deepcopy(pod) if pod is not None else None

    def delete_pod(self, ns: str, name: str) -> bool:
        """Removes a pod; returns whether it existed."""
        with self._lock:
            prev = self._pods.get((ns, name))
            self._commit_pod((ns, name), None, copy.deepcopy(prev))
            return prev is not None

    def modify_pod(self, ns: str, name: str, annotations: Optional[dict] = None,
                   labels: Optional[dict] = None, merge: bool = True) -> Optional[dict]:
        """Changes a pod as another client would (bumping its resourceVersion); None if absent."""
        with self._lock:
            pod = self._pods.get((ns, name))
            if pod is None:
                return None
            prev = copy.deepcopy(pod)
            meta = pod.setdefault("metadata", {})
            for key, value in (("annotations", annotations), ("labels", labels)):
                if value is None:
                    continue
                merged = dict(meta.get(key) or {}) if merge else {}
                merged.update(value)
                if merged:
                    meta[key] = merged
                else:
                    meta.pop(key, None)
            meta["resourceVersion"] = self._next_rv()
            self._commit_pod((ns, name), pod, prev)
            return copy.deepcopy(pod)

    def bump_pod(self, ns: str, name: str) -> bool:
        """Simulates a concurrent writer by bumping the pod's resourceVersion only."""
        with self._lock:
            pod = self._pods.get((ns, name))
            if pod is None or not isinstance(pod.get("metadata"), dict):
                return False
            prev = copy.deepcopy(pod)
            pod["metadata"]["resourceVersion"] = self._next_rv()
            self._commit_pod((ns, name), pod, prev)
            return True

    def list_pods(self, opts: ListOptions) -> Result:
        """LIST of the pods matching opts (its namespace, or all with ""), sorted by namespace
        and name; items carry no kind/apiVersion, as in the real server's lists."""
        with self._lock:
            if self._sorted_keys is None:
                self._sorted_keys = sorted(self._pods)
            try:
                chosen, meta = page(self._sorted_keys, self._pods.__getitem__,
                                    lambda key, pod: opts.matches(pod, key[0]), opts.raw, str(self._rv))
            except OptionError as err:
                return err.code, err.status
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": meta,
                         "items": [_list_item(p) for p in chosen]}

    # ---- watch -----------------------------------------------------------------------------

    def open_watch(self, watcher: PodWatcher) -> PodWatcher:
        """Registers a watch stream: queues its initial events (synthetic ADDED without a
        resourceVersion, else the history after it) or sets `watcher.expired` (410)."""
        with self._lock:
            pods = [(ns, p) for (ns, _), p in sorted(self._pods.items())]
            return self._watch.open(watcher, pods, self._rv)

    def open_object_watch(self, watcher: PodWatcher, objects: list) -> PodWatcher:
        """open_watch for another kind (objects.py): `objects` are its current (namespace,
        object) pairs in key order, taken under this store's lock."""
        with self._lock:
            return self._watch.open(watcher, objects, self._rv)

    def record_object_event(self, event: PodEvent) -> None:
        """Records another kind's change (objects.py) in the one watch history; the caller holds
        the lock and gave the object its new resourceVersion."""
        with self._lock:
            self._watch.record(event)

    def close_watch(self, watcher: PodWatcher) -> None:
        """Unregisters a watch stream."""
        with self._lock:
            self._watch.close(watcher)

    def next_watch_events(self, watcher: PodWatcher, generation: int,
                          timeout: float) -> tuple[list, int]:
        """Waits (at most `timeout`) until the watcher has events or something woke the streams
        after `generation`; returns (the queued (rv, type, object) events, the resourceVersion
        the watcher is caught up to once it has sent them: what a bookmark may then announce)."""
        with self._cond:
            if not watcher.queue and self._watch.generation == generation and timeout > 0:
                self._cond.wait(timeout)
            events = list(watcher.queue)
            watcher.queue.clear()
            return events, self._rv

    def watch_generation(self) -> int:
        """The wake-up counter; a stream waits only while it is unchanged."""
        with self._lock:
            return self._watch.generation

    def wake_watchers(self) -> None:
        """Wakes every watch stream (a fault was added, or the server stops)."""
        with self._cond:
            self._watch.wake()

    def watches(self) -> list[dict]:
        """The open watch streams."""
        with self._lock:
            return [w.describe() for _, w in sorted(self._watch.watchers.items())]

    def compact(self) -> str:
        """Drops the whole watch history: a watch from any resourceVersion before the current one
        then gets 410 Expired. Returns the current resourceVersion."""
        with self._lock:
            self._watch.history.compact(self._rv)
            return str(self._rv)

    def set_history_limit(self, limit: int) -> None:
        """How many pod events the history keeps."""
        with self._lock:
            self._watch.history.set_limit(limit)

    def history_limit(self) -> int:
        """How many pod events the history keeps."""
        with self._lock:
            return self._watch.history.limit

    def history(self) -> dict:
        """The history's floor, limit and kept events."""
        with self._lock:
            return self._watch.history.describe()

    def expired_floor(self) -> int:
        """The oldest resourceVersion a watch may start from."""
        with self._lock:
            return self._watch.history.floor

    def update_pod(self, ns: str, name: str, body: Any, subresource: str) -> Result:
        """Applies PUT pods/{name} or pods/{name}/status with the real server's checks."""
        try:
            meta = check_object("Pod", body)
        except DecodeError as err:
            return 400, st.bad_request(str(err))
        if body.get("kind") not in (None, "Pod") or body.get("apiVersion") not in (None, "v1"):
            return 400, st.bad_request(f'the object provided is unrecognized (must be of type '
                                       f'Pod): kind "{body.get("kind")}", apiVersion '
                                       f'"{body.get("apiVersion")}"')
        if meta.get("name", "") != name:
            return 400, st.bad_request(f"the name of the object ({meta.get('name', '')}) does "
                                       f"not match the name on the URL ({name})")
        if meta.get("namespace") and meta["namespace"] != ns:
            return 400, st.bad_request("the namespace of the provided object does not match "
                                       "the namespace sent on the request")
        rv = meta.get("resourceVersion", "")
        if rv and not _RV_RE.match(rv):
            return 400, st.bad_request(f'invalid resource version: strconv.ParseUint: parsing '
                                       f'"{rv}": invalid syntax')
        annotations = meta.get("annotations") or {}
        invalid = validate_annotations("Pod", name, annotations)
        with self._lock:
            stored = self._pods.get((ns, name))
            if stored is None:
                return 404, st.not_found("pods", name)
            smeta = stored.get("metadata")
            if not isinstance(smeta, dict):
                return 500, st.internal_error("stored pod has no metadata")
            if meta.get("uid") and meta["uid"] != smeta.get("uid"):
                return 409, st.conflict_uid("pods", name, meta["uid"], str(smeta.get("uid")))
            if rv != smeta.get("resourceVersion") and (rv or self.strict_resource_version):
                return 409, st.conflict_modified("pods", name)
            if invalid is not None:
                return 422, invalid
            prev = copy.deepcopy(stored)
            for key in ("labels", "annotations"):
                if meta.get(key):
                    smeta[key] = dict(meta[key])
                else:
                    smeta.pop(key, None)
            if subresource == "status":
                stored["status"] = copy.deepcopy(body.get("status") or {})
            smeta["resourceVersion"] = self._next_rv()
            self._commit_pod((ns, name), stored, prev)
            return 200, copy.deepcopy(stored)

    def patch_pod(self, ns: str, name: str, patch: Any, patch_type: str,
                  subresource: str) -> Result:
        """Applies PATCH pods/{name}[/status]: the patch is applied to the stored pod and the
        result goes through update_pod's checks, atomically. A resourceVersion in the patch is a
        precondition (stale: 409); without one the patch applies to whatever is stored."""
        with self._lock:
            stored = self._pods.get((ns, name))
            if stored is None:
                return 404, st.not_found("pods", name)
            try:
                patched = apply_patch(patch_type, stored, patch)
            except PatchError as err:
                return 400, st.bad_request(str(err))
            meta, smeta = patched.get("metadata"), stored.get("metadata")
            if isinstance(meta, dict) and isinstance(smeta, dict) and \
                    not meta.get("resourceVersion"):
                meta["resourceVersion"] = smeta.get("resourceVersion")
            return self.update_pod(ns, name, patched, subresource)

    # ---- network-attachment-definitions ----------------------------------------------------

    def put_nad(self, ns: str, name: str, config: Optional[str],
                annotations: Optional[dict] = None, raw_spec: Any = None) -> dict:
        """Creates or replaces a NAD; config None gives an empty spec (config from confDir)."""
        with self._lock:
            meta: dict = {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                          "resourceVersion": self._next_rv(), "generation": 1,
                          "creationTimestamp": now_rfc3339()}
            if annotations:
                meta["annotations"] = dict(annotations)
            if raw_spec is not None:
                spec = copy.deepcopy(raw_spec)
            else:
                spec = {"config": config} if config is not None else {}
            nad = {"apiVersion": f"{NAD_GROUP}/v1", "kind": "NetworkAttachmentDefinition",
                   "metadata": meta, "spec": spec}
            prev = self._nads.get((ns, name))
            self._nads[(ns, name)] = nad
            self._watch.record(PodEvent(self._rv, ADDED if prev is None else MODIFIED, ns, copy.deepcopy(nad),
                                        copy.deepcopy(prev), NAD_KEY))
            return copy.deepcopy(nad)

    def delete_nad(self, ns: str, name: str) -> bool:
        """Removes a NAD; returns whether it existed."""
        with self._lock:
            prev = self._nads.pop((ns, name), None)
            if prev is not None:
                rv = int(self._next_rv())
                self._watch.record(PodEvent(rv, DELETED, ns, with_resource_version(prev, rv), prev, NAD_KEY))
            return prev is not None

    def open_nad_watch(self, watcher: PodWatcher) -> PodWatcher:
        """open_watch for NADs (every namespace's; the watcher's options select)."""
        with self._lock:
            return self._watch.open(watcher, [(ns, n) for (ns, _), n in sorted(self._nads.items())], self._rv)

    def get_nad(self, ns: str, name: str) -> Result:
        """GET of one NAD: 200 with it, or the real 404 Status."""
        with self._lock:
            nad = self._nads.get((ns, name))
            if nad is None:
                return 404, st.not_found(NAD_RESOURCE, name, NAD_GROUP)
            return 200, copy.deepcopy(nad)

    def list_nads(self, ns: str) -> Result:
        """LIST of a namespace's NADs ("" = every namespace's), sorted as etcd returns them."""
        with self._lock:
            items = [copy.deepcopy(n) for (nns, _), n in sorted(self._nads.items()) if nns == ns or not ns]
            return 200, {"apiVersion": f"{NAD_GROUP}/v1",
                         "kind": "NetworkAttachmentDefinitionList",
                         "metadata": {"resourceVersion": str(self._rv)}, "items": items}

    # ---- events ----------------------------------------------------------------------------

    def create_event(self, ns: str, body: Any, group: str) -> Result:
        """POST of a core/v1 (group "") or events.k8s.io/v1 Event: 201 with the stored event."""
        try:
            meta = check_object("Event", body)
        except DecodeError as err:
            return 400, st.bad_request(str(err))
        if body.get("kind") not in (None, "Event"):
            return 400, st.bad_request(f'the object provided is unrecognized (must be of type '
                                       f'Event): kind "{body.get("kind")}"')
        if meta.get("namespace") and meta["namespace"] != ns:
            return 400, st.bad_request("the namespace of the provided object does not match "
                                       "the namespace sent on the request")
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = meta["generateName"] + secrets.token_hex(3)[:5]
        if not name:
            return 422, st.invalid("Event", "", "metadata.name", "FieldValueRequired",
                                   "Required value: name or generateName is required")
        involved = body.get("regarding" if group else "involvedObject")
        if isinstance(involved, dict) and involved.get("namespace") not in (None, "", ns):
            field = "regarding.namespace" if group else "involvedObject.namespace"
            return 422, st.invalid("Event", name, field, "FieldValueInvalid",
                                   f'Invalid value: "{involved["namespace"]}": does not match '
                                   f'event.namespace')
        with self._lock:
            key = (group, ns, name)
            if key in self._events:
                return 409, st.already_exists("events", name, group)
            event = copy.deepcopy(body)
            event["kind"] = "Event"
            event["apiVersion"] = f"{group}/v1" if group else "v1"
            emeta = event.setdefault("metadata", {})
            emeta.update({"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                          "resourceVersion": self._next_rv(),
                          "creationTimestamp": now_rfc3339()})
            self._events[key] = event
            self._event_order.append(key)
            return 201, copy.deepcopy(event)

    def events(self) -> list[dict]:
        """Returns every stored event, oldest first."""
        with self._lock:
            return [copy.deepcopy(self._events[k]) for k in self._event_order]

    def clear_events(self) -> None:
        """Forgets every stored event."""
        with self._lock:
            self._events.clear()
            self._event_order.clear()
