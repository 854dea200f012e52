"""Runtime fault injection for the double.

A fault matches requests by path regex (re.search on the path without the query) and optionally
by method, lets `skip` matching requests through, then applies to the next `count` matching
requests (None = until removed). Actions:

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

Delay faults stack; of the other matching faults only the first (in insertion order) fires and is
consumed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

ACTIONS = ("status", "delay", "drop", "reset", "truncate", "wrong_type", "raw", "conflict")
DEFAULT_WRONG_TYPE = {"metadata.annotations": ["wrong", "type"]}


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
    hits: int = 0

    def to_dict(self) -> dict:
        """Returns the rule as JSON-ready data."""
        return asdict(self)


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
    return fault


@dataclass
class Selection:
    """What the faults decided for one request."""
    delay_ms: float = 0
    terminal: Optional[Fault] = None
    applied: list = field(default_factory=list)


class FaultSet:
    """Ordered, thread-safe collection of fault rules."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._next_id = 1

    def add(self, spec: dict) -> Fault:
        """Adds a rule from its description; returns it (with its id)."""
        with self._lock:
            fault = make_fault(self._next_id, spec)
            self._next_id += 1
            self._faults.append(fault)
            return fault

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

    def select(self, method: str, path: str) -> Selection:
        """Consumes and returns the faults that apply to this request."""
        sel = Selection()
        with self._lock:
            for fault in self._faults:
                if fault.count == 0 or (fault.method and fault.method != method):
                    continue
                if not re.search(fault.path, path):
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
