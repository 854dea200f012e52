"""LIST paging (`limit` and `continue`), as kube-apiserver pages a list: at most `limit` items in
key order, and while more remain a `metadata.continue` token and `remainingItemCount`. Every page of
one list carries the resourceVersion of its first page (the token holds it), so a client that
watches from it afterwards gets every change made while it was paging — the double always serves
the current objects, so those changes may also already show on later pages, which a watcher takes
as idempotent updates. A token that does not decode is the real 400. With `resourceVersion=0` the
list comes from the watch cache, which ignores `limit`.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Optional

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


def page(keyed: list[tuple[tuple, Any]], raw: dict, current_rv: str) -> tuple[list, dict]:
    """(the page's items, the list's metadata) of `keyed` ((key, item) in key order) for the
    query parameters `raw`; raises OptionError for a bad continue token."""
    token = raw.get("continue", "")
    rv = current_rv
    if token:
        state = _decode(token)
        rv, after = str(state["rv"]), tuple(state["after"])
        keyed = [(k, item) for k, item in keyed if k > after]
    limit = _limit(raw)
    meta: dict = {"resourceVersion": rv}
    if limit and len(keyed) > limit:
        last: Optional[tuple] = keyed[limit - 1][0]
        meta["continue"] = base64.urlsafe_b64encode(
            json.dumps({"rv": rv, "after": list(last)}).encode()).decode()
        meta["remainingItemCount"] = len(keyed) - limit
        keyed = keyed[:limit]
    return [item for _, item in keyed], meta
