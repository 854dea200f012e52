"""Reads the rules of the ClusterRole manifold ships (conf/rbac.yaml), so the double enforces
exactly what the manifest grants: a rule added there (e.g. `resourceclaims` get or
`resourceslices` list in `resource.k8s.io`) is allowed by `set_rbac("manifold")` at once.

Stdlib only, so this reads the small YAML subset such manifests use: documents separated by
`---`, the first whose top-level `kind:` is ClusterRole, its top-level `rules:` list of mappings
whose values are string lists in flow form (`verbs: ["get", "list"]`) or block form (`- get` lines
under the key), with plain, single- or double-quoted scalars and `#` comments. Anything else in
the rules is refused with a RoleFormatError naming the line, rather than guessed at.
"""

from __future__ import annotations

import os
import re
from typing import Optional

SHIPPED_RBAC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "..", "..", "..", "conf", "rbac.yaml"))
RULE_KEYS = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")
_KEY_RE = re.compile(r"^([A-Za-z]+):(?:\s+(.*))?$")
_FLOW_ITEM_RE = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|[^,]+?)\s*(?:,|$)')


class RoleFormatError(ValueError):
    """The manifest is not in the subset this reader understands."""


def _strip_comment(line: str) -> str:
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def _flow_list(text: str) -> Optional[list[str]]:
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    inner = text[1:-1].strip()
    return [_scalar(m.group(1)) for m in _FLOW_ITEM_RE.finditer(inner) if m.group(1)] \
        if inner else []


def parse_cluster_role(text: str, where: str = "<text>") -> list[dict]:
    """The `rules` of the first ClusterRole document in a YAML text."""
    for document in re.split(r"(?m)^---[ \t]*$", text):
        lines = [_strip_comment(line) for line in document.splitlines()]
        if any(re.fullmatch(r"kind:\s*ClusterRole", line) for line in lines):
            return _rules(lines, where)
    raise RoleFormatError(f"{where}: no ClusterRole document")


def _rules(lines: list[str], where: str) -> list[dict]:
    rules: list[dict] = []
    rule: Optional[dict] = None
    rule_indent = -1
    pending: Optional[str] = None  # the key whose block list is being read
    start = next((i for i, line in enumerate(lines) if re.fullmatch(r"rules:\s*(\[\])?", line)),
                 None)
    if start is None:
        raise RoleFormatError(f"{where}: the ClusterRole has no top-level rules")
    for number, line in enumerate(lines[start + 1:], start + 2):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if indent == 0 and not text.startswith("- "):
            break  # the next top-level key
        if text.startswith("- ") and (rule is None or indent <= rule_indent):
            rule, rule_indent, pending = {}, indent, None
            rules.append(rule)
            text = text[2:].strip()
        elif text.startswith("- ") and pending is not None and rule is not None:
            rule[pending].append(_scalar(text[2:]))
            continue
        match = _KEY_RE.match(text)
        if rule is None or match is None or match.group(1) not in RULE_KEYS:
            raise RoleFormatError(f"{where}:{number}: cannot read rule line {line.strip()!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        if not value:
            rule[key], pending = [], key
            continue
        items = _flow_list(value)
        if items is None:
            raise RoleFormatError(f"{where}:{number}: {key} must be a list, not {value!r}")
        rule[key], pending = items, None
    return rules


def load_cluster_role(path: str = SHIPPED_RBAC) -> list[dict]:
    """The rules of the ClusterRole in a manifest file (default: the shipped conf/rbac.yaml)."""
    with open(path, encoding="utf-8") as f:
        return parse_cluster_role(f.read(), path)
