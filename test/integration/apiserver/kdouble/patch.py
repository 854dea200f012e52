"""PATCH bodies the double understands: JSON merge patch and the map part of strategic merge patch.

A JSON merge patch (RFC 7386, `application/merge-patch+json`) merges objects key by key, replaces
every other value, and removes a key whose patch value is `null`. A strategic merge patch
(`application/strategic-merge-patch+json`) behaves the same on maps, which is all that matters for
`metadata.annotations` and `metadata.labels`, plus its `$patch` directive on a map (`replace`,
`delete`, `merge`); `$setElementOrder/<list>` only orders lists and is ignored. The double replaces
lists wholesale under both types (the real server merges lists with a patch merge key, such as
containers by name); any other directive is refused rather than silently misapplied. Patches are
applied to a copy: the caller decides whether the result is stored.
"""

from __future__ import annotations

import copy
from typing import Any

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
PATCH_TYPES = (MERGE, STRATEGIC)

_DIRECTIVE = "$patch"
_IGNORED_PREFIX = "$setElementOrder/"


class PatchError(ValueError):
    """A patch the double cannot apply; the message is the 400 response's."""


def apply_patch(patch_type: str, target: dict, patch: Any) -> dict:
    """Returns `target` with `patch` applied (the target itself is left unchanged)."""
    if not isinstance(patch, dict):
        raise PatchError(f"json: cannot unmarshal {_json_kind(patch)} into Go value of type "
                         f"map[string]interface {{}}")
    if patch_type == MERGE:
        return _merge(target, patch)
    if patch_type == STRATEGIC:
        return _strategic(target, patch)
    raise PatchError(f"unsupported patch type {patch_type!r}")


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "bool" if isinstance(value, bool) else "number"


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _strategic(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get(_DIRECTIVE, "merge")
    if directive not in ("merge", "replace"):
        raise PatchError(f"the double does not implement strategic merge patch directive "
                         f"{_DIRECTIVE}: {directive!r} here")
    result = dict(target) if isinstance(target, dict) and directive == "merge" else {}
    for key, value in patch.items():
        if key == _DIRECTIVE or key.startswith(_IGNORED_PREFIX):
            continue
        if key.startswith("$"):
            raise PatchError(f"the double does not implement strategic merge patch directive "
                             f"{key!r}")
        if value is None or isinstance(value, dict) and value.get(_DIRECTIVE) == "delete":
            result.pop(key, None)
        else:
            result[key] = _strategic(result.get(key), value)
    return result
