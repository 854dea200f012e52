"""WATCH of the generic kinds (objects.py): MultiNetworkPolicies, Namespaces, DRA objects.

Every change an `ObjectStore` makes is recorded, under the store's lock, as a watch event of its
kind in the one cluster-wide history (watch.py), so a watch of policies or namespaces behaves as
the pods' does: synthetic ADDED events without a resourceVersion, the history after one, 410 when
it is gone, selectors applied per event, bookmarks, the stream faults, and PartialObjectMetadata
when asked for. `watch_handler(kind)` is the route's handler.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Optional

from .list_options import OptionError, parse_list_options
from .routes import Call
from .watch import ADDED, DELETED, MODIFIED, PodEvent, PodWatcher


def _rv(obj: dict, store: Any) -> int:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    text = str(meta.get("resourceVersion") or store.current_rv())
    return int(text) if text.isdigit() else int(store.current_rv())


def record_change(store: Any, kind: Any, ns: str, obj: dict, prev: Optional[dict]) -> None:
    """An object of `kind` in `ns` was created or changed (`prev`: its state before, None when
    new); `obj` carries its new resourceVersion."""
    ns = ns if kind.resource.namespaced else ""
    store.record_object_event(PodEvent(_rv(obj, store), ADDED if prev is None else MODIFIED, ns,
                                       copy.deepcopy(obj), copy.deepcopy(prev), kind.key))


def record_deletion(store: Any, kind: Any, ns: str, obj: dict) -> None:
    """An object was deleted; `obj` is its last state at the deletion's resourceVersion."""
    ns = ns if kind.resource.namespaced else ""
    store.record_object_event(PodEvent(_rv(obj, store), DELETED, ns, copy.deepcopy(obj),
                                       copy.deepcopy(obj), kind.key))


def watch_handler(kind: Any, objects: Callable[[Any], Any]) -> Callable[[Any, Call], tuple]:
    """The collection WATCH of `kind`; `objects(store)` is the kind's ObjectStore."""

    def watch(store: Any, call: Call) -> tuple:
        try:
            opts = parse_list_options(call.query, call.info.namespace, True, kind.fields)
        except OptionError as err:
            return err.code, err.status
        watcher = PodWatcher(opts, path=call.info.path, query=call.query, user=call.user,
                             kind=kind.key)
        return 200, objects(store).open_watch(kind, watcher)

    return watch
