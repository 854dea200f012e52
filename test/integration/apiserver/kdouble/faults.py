"""Runtime fault injection for the double.

A fault matches requests by path regex (re.search on the path without the query) and optionally
by method, by a regex on the percent-decoded query string (`query`, e.g.
`fieldSelector=spec.nodeName=node1`) and by whether the request is a watch
(`watch`: True = watch requests only, False = everything but watches); it lets `skip` matching
requests through, then applies to the next `count` matching requests (None = until removed).
Request actions (decided when the request arrives):

  status      answer with `status` (real Status body, or APF's plain text with body_format="text"),
              plus `Retry-After: retry_after` when given
  delay       only sleep `delay_ms`, then serve normally (any other action may carry delay_ms too)
  drop        read the request, then close the connection without answering
  reset       send the headers and the first half of the real body, then close
  truncate    send a well-framed response whose JSON body is cut at `truncate_at` (default half)
  wrong_type  serve the real response with dotted paths replaced (`set`), e.g. annotations as a list
  raw         answer with `status`, `content_type` and the literal `body`
  conflict    a concurrent writer bumps the target pod's resourceVersion first, so the update gets
              the real 409 and a re-GET sees a new resourceVersion

reset, truncate and wrong_type shape a one-piece body and never match a watch. Stream actions apply
to open (and future) watch streams instead, matched by path/query; `skip` counts the object events
(ADDED/MODIFIED/DELETED) that pass on matching streams first:

  watch_cut        at the next event: send the first `truncate_at` bytes (default half) of its JSON
                   line in a chunk, then close the connection abruptly (no final chunk)
  watch_garbage    at the next event: send the line `body` (default: not JSON) first, then the event
                   and carry on, or end the stream there (`close`)
  watch_oversized  at the next event: send it padded (an annotation) to a single line of `size`
                   bytes (default 4 MiB), then carry on
  watch_end        now (a stream is woken for it): end the stream cleanly, as when timeoutSeconds
                   expires (a final BOOKMARK when bookmarks are allowed)
  watch_error      now: send an ERROR event with the Status for `status` (410: Expired, as etcd's
                   compaction), then end the stream

Delay faults stack; of the other matching faults only the first (in insertion order) fires and is
consumed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional
from urllib.parse import unquote_plus

EVENT_ACTIONS = ("watch_cut", "watch_garbage", "watch_oversized")
NOW_ACTIONS = ("watch_end", "watch_error")
STREAM_ACTIONS = EVENT_ACTIONS + NOW_ACTIONS
BODY_ACTIONS = ("reset", "truncate", "wrong_type")
ACTIONS = ("status", "delay", "drop", "reset", "truncate", "wrong_type", "raw",
           "conflict") + STREAM_ACTIONS
DEFAULT_WRONG_TYPE = {"metadata.annotations": ["wrong", "type"]}
DEFAULT_GARBAGE = "this is not JSON"
DEFAULT_OVERSIZED = 4 * 1024 * 1024


@dataclass
class Fault:
    """One fault rule and its remaining budget."""
    id: int
    action: str
    path: str = ".*"
    method: Optional[str] = None
    status: int = 500
    retry_after: Optional[int] = None
    body_format: str = "status"
    delay_ms: int = 0
    count: Optional[int] = 1
    skip: int = 0
    body: str = ""
    content_type: str = "application/json"
    set: dict = field(default_factory=dict)
    truncate_at: Optional[int] = None
    query: Optional[str] = None
    watch: Optional[bool] = None
    size: int = DEFAULT_OVERSIZED
    close: bool = False
    hits: int = 0

    def to_dict(self) -> dict:
        """Returns the rule as JSON-ready data."""
        return asdict(self)

    def matches(self, method: str, path: str, query: str, watch: bool) -> bool:
        """True when the rule's filters (method, path, query, watch flag) accept the request."""
        return (not self.method or self.method == method) and \
            (self.watch is None or self.watch == watch) and \
            re.search(self.path, path) is not None and \
            (self.query is None or re.search(self.query, unquote_plus(query)) is not None)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def make_fault(fault_id: int, spec: dict) -> Fault:
    """Validates a fault description (as sent by tests) and builds the rule."""
    if not isinstance(spec, dict):
        raise ValueError("a fault is a JSON object")
    known = set(Fault.__dataclass_fields__) - {"id", "hits"}
    unknown = set(spec) - known
    if unknown:
        raise ValueError(f"unknown fault fields: {sorted(unknown)}")
    fault = Fault(id=fault_id, **spec)
    if fault.action not in ACTIONS:
        raise ValueError(f"unknown fault action {fault.action!r}; expected one of {ACTIONS}")
    re.compile(fault.path)
    if fault.query is not None:
        if not isinstance(fault.query, str):
            raise ValueError("fault query is a regex string or null")
        re.compile(fault.query)
    if fault.watch is not None and not isinstance(fault.watch, bool):
        raise ValueError("fault watch is true, false or null")
    if fault.action in STREAM_ACTIONS:
        if fault.watch is False:
            raise ValueError(f"{fault.action} applies to watch streams only")
        fault.watch = True
    if fault.watch is True and fault.action in BODY_ACTIONS:
        raise ValueError(f"{fault.action} never matches a watch (use watch_cut, watch_garbage "
                         f"or watch_oversized)")
    if not _is_int(fault.size) or fault.size < 1:
        raise ValueError("fault size is a positive integer")
    if not isinstance(fault.close, bool):
        raise ValueError("fault close is a boolean")
    if fault.method is not None:
        fault.method = str(fault.method).upper()
    if not _is_int(fault.status) or not 100 <= fault.status <= 599:
        raise ValueError(f"fault status {fault.status!r} is not an HTTP status code")
    if fault.count is not None and (not _is_int(fault.count) or fault.count < 1):
        raise ValueError("fault count is a positive integer or null (unlimited)")
    if not _is_int(fault.skip) or fault.skip < 0:
        raise ValueError("fault skip is a non-negative integer")
    if not isinstance(fault.delay_ms, (int, float)) or isinstance(fault.delay_ms, bool) \
            or fault.delay_ms < 0:
        raise ValueError("fault delay_ms is a non-negative number")
    if fault.action == "delay" and not fault.delay_ms:
        raise ValueError("a delay fault needs delay_ms > 0")
    for name in ("retry_after", "truncate_at"):
        value = getattr(fault, name)
        if value is not None and (not _is_int(value) or value < 0):
            raise ValueError(f"fault {name} is a non-negative integer or null")
    if not isinstance(fault.body, str) or not isinstance(fault.content_type, str):
        raise ValueError("fault body and content_type are strings")
    if fault.body_format not in ("status", "text"):
        raise ValueError("fault body_format is 'status' or 'text'")
    if not isinstance(fault.set, dict):
        raise ValueError("fault 'set' maps dotted paths to replacement values")
    if fault.action == "wrong_type" and not fault.set:
        fault.set = dict(DEFAULT_WRONG_TYPE)
    if fault.action == "watch_garbage" and not fault.body:
        fault.body = DEFAULT_GARBAGE
    return fault


@dataclass
class Selection:
    """What the faults decided for one request."""
    delay_ms: float = 0
    terminal: Optional[Fault] = None
    applied: list = field(default_factory=list)


class FaultSet:
    """Ordered, thread-safe collection of fault rules. `on_add` runs (outside the lock) after a
    rule is added, so open watch streams can pick up a stream fault at once."""

    def __init__(self, on_add: Optional[Callable[[], None]] = None) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._next_id = 1
        self.on_add = on_add

    def add(self, spec: dict) -> Fault:
        """Adds a rule from its description; returns it (with its id)."""
        with self._lock:
            fault = make_fault(self._next_id, spec)
            self._next_id += 1
            self._faults.append(fault)
            added = Fault(**asdict(fault))
        if self.on_add is not None:
            self.on_add()
        return added

    def remove(self, fault_id: int) -> bool:
        """Removes one rule; returns whether it existed."""
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if f.id != fault_id]
            return len(self._faults) != before

    def clear(self) -> None:
        """Removes every rule."""
        with self._lock:
            self._faults.clear()

    def list(self) -> list[dict]:
        """Returns every rule with its remaining count and hits."""
        with self._lock:
            return [f.to_dict() for f in self._faults]

    def select(self, method: str, path: str, query: str = "", watch: bool = False) -> Selection:
        """Consumes and returns the request faults that apply to this request."""
        sel = Selection()
        with self._lock:
            for fault in self._faults:
                if fault.count == 0 or fault.action in STREAM_ACTIONS or \
                        (watch and fault.action in BODY_ACTIONS) or \
                        not fault.matches(method, path, query, watch):
                    continue
                if fault.action != "delay" and sel.terminal is not None:
                    continue
                if fault.skip > 0:
                    fault.skip -= 1
                    continue
                fault.hits += 1
                if fault.count is not None:
                    fault.count -= 1
                sel.delay_ms += fault.delay_ms
                sel.applied.append(fault.id)
                if fault.action != "delay":
                    sel.terminal = Fault(**asdict(fault))
        return sel

    def stream_fault(self, path: str, query: str, at_event: bool) -> Optional[Fault]:
        """Consumes and returns the stream fault that fires on a watch stream now, if any.
        At an event, matching stream faults (watch_end and watch_error included) count it
        against their `skip`, in order, until one fires; between events only watch_end and
        watch_error with no skip left fire."""
        with self._lock:
            for fault in self._faults:
                if fault.count == 0 or fault.action not in STREAM_ACTIONS or \
                        not fault.matches("GET", path, query, True):
                    continue
                if not at_event and fault.action not in NOW_ACTIONS:
                    continue
                if fault.skip > 0:
                    if at_event:
                        fault.skip -= 1
                    continue
                fault.hits += 1
                if fault.count is not None:
                    fault.count -= 1
                return Fault(**asdict(fault))
        return None


def apply_set(obj: Any, replacements: dict) -> Any:
    """Replaces dotted paths (`metadata.annotations`, `items.0.spec`) in a decoded body."""
    for dotted, value in replacements.items():
        keys = str(dotted).split(".")
        target = obj
        for key in keys[:-1]:
            if isinstance(target, list) and key.isdigit() and int(key) < len(target):
                target = target[int(key)]
            elif isinstance(target, dict):
                target = target.setdefault(key, {})
            else:
                target = None
                break
        last = keys[-1]
        if isinstance(target, dict):
            target[last] = value
        elif isinstance(target, list) and last.isdigit() and int(last) < len(target):
            target[int(last)] = value
    return obj
