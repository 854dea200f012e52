"""LIST paging (`limit` and `continue`), as kube-apiserver pages a list: at most `limit` items in
key order, and while more remain a `metadata.continue` token. Every page of one list carries the
resourceVersion of its first page (the token holds it), so a client that watches from it afterwards
gets every change made while it was paging — the double always serves the current objects, so those
changes may also already show on later pages, which a watcher takes as idempotent updates. A token
that does not decode is the real 400. With `resourceVersion=0` the list comes from the watch cache,
which ignores `limit`. A page costs the items it holds, not the whole collection (the keys are
searched, in order), so a client can page through a large cluster.
"""

from __future__ import annotations

import base64
import bisect
import json
from typing import Any, Callable

from . import k8s_status as st
from .list_options import OptionError


def _limit(raw: dict) -> int:
    if raw.get("resourceVersion") == "0":
        return 0  # served from the watch cache, which ignores limit
    text = raw.get("limit", "")
    return int(text) if text.isdigit() else 0


def _decode(token: str) -> dict:
    try:
        state = json.loads(base64.urlsafe_b64decode(token.encode()).decode())
        if isinstance(state, dict) and isinstance(state.get("after"), list) and str(state.get("rv", "")).isdigit():
            return state
    except (ValueError, UnicodeDecodeError):
        pass
    raise OptionError(400, st.bad_request("continue key is not valid: illegal base64 data"))


def page(keys: list, item: Callable[[Any], Any], matches: Callable[[Any, Any], bool], raw: dict,
         current_rv: str) -> tuple[list, dict]:
    """(the page's items, the list's metadata) for the query parameters `raw`: `keys` sorted,
    `item(key)` the stored object, `matches(key, obj)` the selectors. Raises OptionError for a bad
    continue token."""
    token = raw.get("continue", "")
    rv, start = current_rv, 0
    if token:
        state = _decode(token)
        rv = str(state["rv"])
        start = bisect.bisect_right(keys, tuple(state["after"]))
    limit = _limit(raw)
    out: list = []
    meta: dict = {"resourceVersion": rv}
    for i in range(start, len(keys)):
        obj = item(keys[i])
        if not matches(keys[i], obj):
            continue
        if limit and len(out) == limit:
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"rv": rv, "after": list(keys[last])}).encode()).decode()
            break
        out.append(obj)
        last = i
    return out, meta
