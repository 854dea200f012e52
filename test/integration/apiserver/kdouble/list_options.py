"""The query parameters of a LIST or WATCH, parsed and refused as kube-apiserver does.

`parse_list_options` turns a query string into `ListOptions`: a field selector (only the field
labels the real server converts for the kind, a `FieldLabels`: for pods `POD_LABELS`, where any
other is a 400 `field label not supported: <x>`; other kinds bring their own table and wording), a
label selector (`a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x,y)`), resourceVersion
(numeric, `""` or `"0"`; anything else is a 400), timeoutSeconds, allowWatchBookmarks, and the
ignored `limit`/`continue`. `ListOptions.matches(pod)` is the predicate a LIST filters with and a
watcher applies to every event. Selectors read the selectable fields the way the pod strategy
computes them, and a hostile stored object (wrong types) simply does not match.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from urllib.parse import parse_qs

from . import k8s_status as st


class OptionError(Exception):
    """A query parameter the real server refuses; carries the (code, Status) to answer."""

    def __init__(self, code: int, status: dict) -> None:
        super().__init__(status.get("message"))
        self.code = code
        self.status = status


def _bad(message: str) -> OptionError:
    return OptionError(400, st.bad_request(message))


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pod_ip(status: dict) -> str:
    ips = status.get("podIPs")
    if isinstance(ips, list) and ips and isinstance(ips[0], dict):
        return _text(ips[0].get("ip"))
    return _text(status.get("podIP"))


# The pod field labels kube-apiserver converts (pkg/apis/core/v1 conversion), with their values.
POD_FIELDS: dict[str, Callable[[dict], str]] = {
    "metadata.name": lambda p: _text(_dict(p.get("metadata")).get("name")),
    "metadata.namespace": lambda p: _text(_dict(p.get("metadata")).get("namespace")),
    "spec.nodeName": lambda p: _text(_dict(p.get("spec")).get("nodeName")),
    "spec.restartPolicy": lambda p: _text(_dict(p.get("spec")).get("restartPolicy")),
    "spec.schedulerName": lambda p: _text(_dict(p.get("spec")).get("schedulerName")),
    "spec.serviceAccountName": lambda p: _text(_dict(p.get("spec")).get("serviceAccountName")),
    "spec.hostNetwork": lambda p: "true" if _dict(p.get("spec")).get("hostNetwork") is True
    else "false",
    "status.phase": lambda p: _text(_dict(p.get("status")).get("phase")),
    "status.podIP": lambda p: _pod_ip(_dict(p.get("status"))),
    "status.nominatedNodeName": lambda p: _text(_dict(p.get("status")).get("nominatedNodeName")),
}


def _refuse_pod_field(label: str) -> str:
    return f"field label not supported: {label}"


@dataclass(frozen=True)
class FieldLabels:
    """The field labels a kind's LIST accepts (label → the object's value, as a string) and the
    refusal its field-label conversion words for any other (the 400's message)."""
    getters: dict[str, Callable[[dict], str]]
    refuse: Callable[[str], str]


POD_LABELS = FieldLabels(POD_FIELDS, _refuse_pod_field)


@dataclass(frozen=True)
class FieldTerm:
    """One `field=value` or `field!=value` requirement; `getter` reads the field (default: the
    pod field of that label)."""
    field: str
    value: str
    equal: bool
    getter: Optional[Callable[[dict], str]] = dataclasses.field(default=None, compare=False,
                                                                repr=False)

    def matches(self, obj: dict) -> bool:
        """True when the object's field satisfies the requirement."""
        get = self.getter or POD_FIELDS[self.field]
        return (get(obj) == self.value) == self.equal


@dataclass(frozen=True)
class LabelTerm:
    """One label requirement: op is `=`, `!=`, `in`, `notin`, `exists` or `!`."""
    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict) -> bool:
        """True when the labels satisfy the requirement (`!=` and `notin` match a missing key)."""
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # "!=", "notin"


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += "\\" + char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == sep:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current + ("\\" if escaped else ""))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str, labels: FieldLabels = POD_LABELS) -> tuple[FieldTerm, ...]:
    """Parses fields.ParseSelector syntax (`a=b,c!=d`, `==` too) and converts the field labels
    as the kind's conversion does (pods by default); raises OptionError (400) like the real
    server."""
    if not text.strip():
        return ()
    terms = []
    for term in _split_unescaped(text, ","):
        match = re.match(r"^((?:[^\\=!]|\\.)*)(!=|==|=)(.*)$", term)
        if match is None:
            raise _bad(f"invalid selector: '{text}'; can't understand '{term}'")
        label, op, value = match.groups()
        if label not in labels.getters:
            raise _bad(labels.refuse(label))
        terms.append(FieldTerm(label, _unescape(value), op != "!=", labels.getters[label]))
    return tuple(terms)


_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_TERM = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQ_TERM = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})$")
_EXISTS_TERM = re.compile(rf"^(?P<not>!?)\s*(?P<key>{_KEY})$")


def _label_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    return terms


def parse_label_selector(text: str) -> tuple[LabelTerm, ...]:
    """Parses labels.Parse syntax (equality, set and existence requirements); 400 otherwise."""
    if not text.strip():
        return ()
    terms = []
    for term in _label_terms(text):
        if match := _SET_TERM.match(term):
            values = tuple(v.strip() for v in match["values"].split(",") if v.strip())
            if not values or not all(re.fullmatch(_VALUE, v) for v in values):
                raise _bad(f"unable to parse requirement: values of {term!r}: "
                           f"for 'in', 'notin' operators, values set can't be empty")
            terms.append(LabelTerm(match["key"], match["op"], values))
        elif match := _EQ_TERM.match(term):
            op = "!=" if match["op"] == "!=" else "="
            terms.append(LabelTerm(match["key"], op, (match["value"],)))
        elif match := _EXISTS_TERM.match(term):
            terms.append(LabelTerm(match["key"], "!" if match["not"] else "exists"))
        else:
            raise _bad(f"unable to parse requirement: invalid label selector term {term!r}")
    return tuple(terms)


def parse_resource_version(text: str, name: str = "resourceVersion") -> Optional[int]:
    """None for `""`/`"0"` (any/most recent), the number otherwise; 400 when not a number."""
    if text in ("", "0"):
        return None
    if not re.fullmatch(r"[0-9]+", text):
        raise _bad(f'{name}: Invalid value: "{text}": strconv.ParseUint: parsing "{text}": '
                   f'invalid syntax')
    return int(text)


def _bool_param(params: dict, name: str) -> bool:
    value = params.get(name, "")
    if value in ("", "0", "false", "False", "FALSE"):
        return False
    if value in ("1", "true", "True", "TRUE", "t", "T"):
        return True
    raise _bad(f'{name}: Invalid value: "{value}": strconv.ParseBool: parsing "{value}": '
               f'invalid syntax')


@dataclass
class ListOptions:
    """The parsed query of a LIST or WATCH."""
    namespace: str = ""
    fields: tuple[FieldTerm, ...] = ()
    labels: tuple[LabelTerm, ...] = ()
    resource_version: Optional[int] = None
    resource_version_text: str = ""
    timeout_seconds: Optional[int] = None
    allow_bookmarks: bool = False
    field_selector: str = ""
    label_selector: str = ""
    raw: dict = field(default_factory=dict)

    def matches(self, pod: Any, namespace: str) -> bool:
        """True when an object (a pod, or another kind's) stored in `namespace` ("" for a
        cluster-scoped one) is in the requested namespace (if any) and passes both selectors."""
        if not isinstance(pod, dict) or self.namespace and namespace != self.namespace:
            return False
        meta = _dict(pod.get("metadata"))
        labels = {k: v for k, v in _dict(meta.get("labels")).items() if isinstance(v, str)}
        return all(t.matches(pod) for t in self.fields) and \
            all(t.matches(labels) for t in self.labels)


def parse_list_options(query: str, namespace: str, watch: bool,
                       labels: FieldLabels = POD_LABELS) -> ListOptions:
    """Parses and checks a LIST/WATCH query of a kind with these field labels (pods by default);
    raises OptionError with the real server's answer."""
    params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    opts = ListOptions(namespace=namespace, raw=params,
                       field_selector=params.get("fieldSelector", ""),
                       label_selector=params.get("labelSelector", ""),
                       resource_version_text=params.get("resourceVersion", ""))
    opts.fields = parse_field_selector(opts.field_selector, labels)
    opts.labels = parse_label_selector(opts.label_selector)
    opts.resource_version = parse_resource_version(opts.resource_version_text)
    opts.allow_bookmarks = _bool_param(params, "allowWatchBookmarks")
    timeout = params.get("timeoutSeconds", "")
    if timeout:
        if not re.fullmatch(r"-?[0-9]+", timeout):
            raise _bad(f'timeoutSeconds: Invalid value: "{timeout}": strconv.ParseInt: '
                       f'parsing "{timeout}": invalid syntax')
        opts.timeout_seconds = int(timeout) if int(timeout) > 0 else None
    if watch and _bool_param(params, "sendInitialEvents"):
        message = ("Forbidden: sendInitialEvents is forbidden for watch unless the WatchList "
                   "feature gate is enabled")
        raise OptionError(422, st.invalid("ListOptions.meta.k8s.io", "", "sendInitialEvents",
                                          "FieldValueForbidden", message))
    return opts
