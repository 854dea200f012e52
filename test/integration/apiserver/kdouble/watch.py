"""Pod watch events: the bounded history, the per-stream watchers and their settings.

The store records one `PodEvent` for every pod change (ADDED, MODIFIED, DELETED, each with its own
resourceVersion; DELETED carries the last state with the deletion's resourceVersion) and hands it,
under the store lock, to every open `PodWatcher`, which converts it the way kube-apiserver's watch
cache does for a watcher with selectors: an object that starts matching is ADDED, one that stops
matching is DELETED (its previous content with the event's resourceVersion), one that keeps
matching is MODIFIED. A new watch replays the history after its resourceVersion, so no event is
lost or duplicated between the replay and the live stream. The history keeps the last `limit`
events; `floor` is the oldest resourceVersion a watch may still start from (everything after it is
kept), and a watch from before it gets the real `410 Expired` ERROR event.
"""

from __future__ import annotations

import collections
import copy
import itertools
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from . import k8s_status as st
from .list_options import ListOptions

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
DEFAULT_HISTORY = 1000
DEFAULT_BOOKMARK_INTERVAL = 60.0  # kube-apiserver's watch cache: roughly every minute
MIN_REQUEST_TIMEOUT = 1800  # --min-request-timeout: a watch lasts 1x to 2x this by default


@dataclass
class WatchSettings:
    """Server options for watch streams, changeable at runtime (admin `set_options`)."""
    bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL
    default_timeout: float = 0.0  # 0: random in [30, 60) min like kube-apiserver

    def timeout_for(self, requested: Optional[int]) -> float:
        """Seconds a stream lasts: timeoutSeconds, else the default, else the real random one."""
        if requested:
            return float(requested)
        if self.default_timeout > 0:
            return self.default_timeout
        return MIN_REQUEST_TIMEOUT * (1.0 + random.random())


@dataclass(frozen=True)
class PodEvent:
    """One recorded pod change. `obj` is the new state (for DELETED: the last state with the
    deletion's resourceVersion); `prev` the state before (None for ADDED). Never mutated."""
    rv: int
    type: str
    namespace: str
    obj: Any
    prev: Any = None
    kind: tuple = ("", "pods")  # (group, plural) of the object


def with_resource_version(obj: Any, rv: int) -> Any:
    """A shallow copy of obj whose metadata.resourceVersion is rv (obj itself if it has no
    metadata object)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return obj
    out = dict(obj)
    out["metadata"] = dict(obj["metadata"], resourceVersion=str(rv))
    return out


def convert(event: PodEvent, opts: ListOptions) -> Optional[tuple[str, Any]]:
    """The (type, object) a watcher with these selectors sees for an event, or None."""
    cur = event.type != DELETED and opts.matches(event.obj, event.namespace)
    old = event.prev is not None and opts.matches(event.prev, event.namespace)
    if cur:
        return (MODIFIED if old else ADDED), event.obj
    if old:
        obj = event.obj if event.type == DELETED else with_resource_version(event.prev, event.rv)
        return DELETED, obj
    return None


class History:
    """The last `limit` pod events, oldest first, and the floor below which they are gone."""

    def __init__(self, floor: int, limit: int = DEFAULT_HISTORY) -> None:
        self._events: collections.deque[PodEvent] = collections.deque()
        self.floor = floor
        self.limit = limit

    def append(self, event: PodEvent) -> None:
        """Keeps the event, dropping the oldest beyond the limit."""
        self._events.append(event)
        self._trim()

    def set_limit(self, limit: int) -> None:
        """Changes how many events are kept (dropping the oldest at once)."""
        self.limit = limit
        self._trim()

    def compact(self, rv: int) -> None:
        """Drops every event up to rv (the current resourceVersion: everything)."""
        while self._events and self._events[0].rv <= rv:
            self._events.popleft()
        self.floor = max(self.floor, rv)

    def _trim(self) -> None:
        while len(self._events) > self.limit:
            self.floor = max(self.floor, self._events.popleft().rv)

    def since(self, rv: int) -> Optional[list[PodEvent]]:
        """Every kept event after rv, or None when some of them were dropped (410)."""
        if rv < self.floor:
            return None
        return [e for e in self._events if e.rv > rv]

    def describe(self) -> dict:
        """Floor, limit and the kept events (type, resourceVersion, namespace/name)."""
        return {"floor": str(self.floor), "limit": self.limit, "events": [
            {"type": e.type, "resourceVersion": str(e.rv), "object": _ref(e.obj)}
            for e in self._events]}


def _ref(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "?"
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


_WATCH_IDS = itertools.count(1)


@dataclass
class PodWatcher:
    """One open watch stream's view of the store: its selectors and the events queued for it.
    The store appends under its lock; the stream's thread pops under the same lock."""
    opts: ListOptions
    path: str = ""
    query: str = ""
    user: Optional[str] = None
    seq: Optional[int] = None
    id: int = field(default_factory=lambda: next(_WATCH_IDS))
    queue: collections.deque = field(default_factory=collections.deque)
    expired: Optional[dict] = None  # the 410 Status when the resourceVersion is too old
    started: float = field(default_factory=time.time)
    events_sent: int = 0
    bookmarks_sent: int = 0
    kind: tuple = ("", "pods")  # (group, plural) watched

    def offer(self, event: PodEvent) -> None:
        """Queues what this watcher sees of the event (if anything)."""
        if event.kind != self.kind:
            return
        seen = convert(event, self.opts)
        if seen is not None:
            self.queue.append((event.rv, seen[0], seen[1]))

    def describe(self) -> dict:
        """What `GET /admin/watches` shows of an open stream."""
        return {"id": self.id, "seq": self.seq, "path": self.path, "query": self.query,
                "user": self.user, "namespace": self.opts.namespace,
                "fieldSelector": self.opts.field_selector,
                "labelSelector": self.opts.label_selector,
                "allowWatchBookmarks": self.opts.allow_bookmarks, "started": self.started,
                "events_sent": self.events_sent, "bookmarks_sent": self.bookmarks_sent,
                "queued": len(self.queue),
                "resource": self.kind[1]}


class WatchRegistry:
    """The open watchers, the history and the wake-up generation; guarded by the store's
    Condition (every method expects the caller to hold it)."""

    def __init__(self, cond: threading.Condition, floor: int) -> None:
        self.cond = cond
        self.history = History(floor)
        self.watchers: dict[int, PodWatcher] = {}
        self.generation = 0

    def record(self, event: PodEvent) -> None:
        """Keeps the event and hands it to every open watcher, then wakes them."""
        self.history.append(event)
        for watcher in self.watchers.values():
            watcher.offer(event)
        self.wake()

    def wake(self) -> None:
        """Wakes every stream (new events, a new fault, shutdown)."""
        self.generation += 1
        self.cond.notify_all()

    def open(self, watcher: PodWatcher, pods: list[tuple[str, Any]],
             current_rv: int) -> PodWatcher:
        """Registers a watcher: synthetic ADDED events for the matching pods when it has no
        resourceVersion, else the history after it (or the 410 Status when that is gone).
        `pods` are the current (namespace, object) pairs of the watched kind in key order."""
        start = watcher.opts.resource_version
        if start is None:
            for namespace, pod in pods:
                if watcher.opts.matches(pod, namespace):
                    watcher.queue.append((current_rv, ADDED, copy.deepcopy(pod)))
        else:
            events = self.history.since(start)
            if events is None:
                watcher.expired = expired_status(start, self.history.floor)
                return watcher
            for event in events:
                watcher.offer(event)
        self.watchers[watcher.id] = watcher
        return watcher

    def close(self, watcher: PodWatcher) -> None:
        """Forgets a watcher whose stream ended."""
        self.watchers.pop(watcher.id, None)


def expired_status(rv: int, floor: int) -> dict:
    """The watch cache's 410 for a resourceVersion older than the history."""
    return st.expired(f"too old resource version: {rv} ({floor})")


def bookmark(rv: int) -> dict:
    """A BOOKMARK event as kube-apiserver encodes it: an empty Pod carrying the resourceVersion."""
    return {"type": BOOKMARK, "object": {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
        "spec": {"containers": None}, "status": {}}}
