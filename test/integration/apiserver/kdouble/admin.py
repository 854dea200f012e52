"""The plain-HTTP admin API (127.0.0.1 only) through which tests drive a double process.

Objects are seeded per kind: pods and NADs with their own routes, the generic kinds of objects.py
(DRA's resourceclaims and resourceslices) under /admin/objects/{plural}[/{namespace}]/{name}.
Requests and responses are JSON. Errors are `{"error": "..."}` with 400 (bad input) or 404
(unknown object or route). The routes are listed in README.md and mirror `ApiServerDouble`'s
methods one to one.
"""

from __future__ import annotations

import http.server
import json
import re
import ssl
from typing import Any, Callable, Optional

from .access import DenyRule, manifold_rbac
from .dra import CLAIMS, SLICES
from .objects import Kind, kind_for_plural, objects_of

_ROUTES: list[tuple[str, re.Pattern, str]] = []


def _route(method: str, pattern: str) -> Callable:
    def register(func: Callable) -> Callable:
        _ROUTES.append((method, re.compile(f"^{pattern}$"), func.__name__))
        return func
    return register


class AdminError(Exception):
    """An admin request that cannot be honoured; becomes `{"error": ...}`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _require(body: dict, key: str, kind: type = str) -> Any:
    value = body.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        raise AdminError(400, f"field {key!r} is required and must be a {kind.__name__}")
    return value


def _optional_map(body: dict, key: str) -> Optional[dict]:
    value = body.get(key)
    if value is not None and not isinstance(value, dict):
        raise AdminError(400, f"field {key!r} must be an object")
    return value


class AdminHandler(http.server.BaseHTTPRequestHandler):
    """Serves the admin API of one double."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        self.server.core.log("admin: " + (format % args))

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _dispatch(self) -> None:
        core = self.server.core
        path = self.path.split("?", 1)[0]
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise AdminError(400, "the request body must be a JSON object")
            for method, pattern, name in _ROUTES:
                match = pattern.match(path)
                if match and method == self.command:
                    result = getattr(self, name)(core, body, *match.groups())
                    self._reply(200, result)
                    return
            raise AdminError(404, f"no admin route {self.command} {path}")
        except AdminError as err:
            self._reply(err.code, {"error": str(err)})
        except (ValueError, TypeError, re.error) as err:
            self._reply(400, {"error": str(err)})

    def _reply(self, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # ---- routes ----------------------------------------------------------------------------

    @_route("GET", "/admin/info")
    def info(self, core, body):  # noqa: ANN001,ANN201
        return core.info()

    @_route("POST", "/admin/shutdown")
    def shutdown(self, core, body):  # noqa: ANN001,ANN201
        core.request_stop()
        self.close_connection = True
        return {"stopping": True}

    @_route("POST", "/admin/pods")
    def add_pod(self, core, body):  # noqa: ANN001,ANN201
        raw = _optional_map(body, "raw")
        return core.store.put_pod(
            _require(body, "namespace"), _require(body, "name"), uid=body.get("uid"),
            annotations=_optional_map(body, "annotations"), labels=_optional_map(body, "labels"),
            spec=_optional_map(body, "spec"), status=_optional_map(body, "status"),
            node_name=body.get("node_name") or "node1", raw=raw)

    @_route("GET", "/admin/pods/([^/]+)/([^/]+)")
    def get_pod(self, core, body, ns, name):  # noqa: ANN001,ANN201
        pod = core.store.get_pod(ns, name)
        if pod is None:
            raise AdminError(404, f"pod {ns}/{name} not found")
        return pod

    @_route("PATCH", "/admin/pods/([^/]+)/([^/]+)")
    def modify_pod(self, core, body, ns, name):  # noqa: ANN001,ANN201
        pod = core.store.modify_pod(ns, name, annotations=_optional_map(body, "annotations"),
                                    labels=_optional_map(body, "labels"),
                                    merge=bool(body.get("merge", True)))
        if pod is None:
            raise AdminError(404, f"pod {ns}/{name} not found")
        return pod

    @_route("DELETE", "/admin/pods/([^/]+)/([^/]+)")
    def delete_pod(self, core, body, ns, name):  # noqa: ANN001,ANN201
        return {"deleted": core.store.delete_pod(ns, name)}

    @_route("POST", "/admin/nads")
    def add_nad(self, core, body):  # noqa: ANN001,ANN201
        config = body.get("config")
        if config is not None and not isinstance(config, str):
            raise AdminError(400, "field 'config' must be a string or null")
        return core.store.put_nad(_require(body, "namespace"), _require(body, "name"), config,
                                  annotations=_optional_map(body, "annotations"),
                                  raw_spec=body.get("raw_spec"))

    @_route("DELETE", "/admin/nads/([^/]+)/([^/]+)")
    def delete_nad(self, core, body, ns, name):  # noqa: ANN001,ANN201
        return {"deleted": core.store.delete_nad(ns, name)}

    @_route("POST", "/admin/objects/([a-z0-9.-]+)")
    def add_object(self, core, body, plural):  # noqa: ANN001,ANN201
        kind = _kind(plural)
        obj = _optional_map(body, "object") or {}
        ns = ""
        if kind.resource.namespaced:
            ns = _require(body, "namespace")
        return objects_of(core.store).put(kind, ns, _require(body, "name"), obj,
                                          raw=bool(body.get("raw")))

    @_route("GET", "/admin/objects/([a-z0-9.-]+)/([^/]+)(?:/([^/]+))?")
    def get_object(self, core, body, plural, first, second):  # noqa: ANN001,ANN201
        kind, ns, name = _address(plural, first, second)
        found = objects_of(core.store).find(kind, ns, name)
        if found is None:
            raise AdminError(404, f"{plural} {'/'.join(filter(None, (ns, name)))} not found")
        return found

    @_route("DELETE", "/admin/objects/([a-z0-9.-]+)/([^/]+)(?:/([^/]+))?")
    def delete_object(self, core, body, plural, first, second):  # noqa: ANN001,ANN201
        kind, ns, name = _address(plural, first, second)
        return {"deleted": objects_of(core.store).remove(kind, ns, name)}

    @_route("GET", "/admin/tokens")
    def get_tokens(self, core, body):  # noqa: ANN001,ANN201
        return {"tokens": core.access.tokens()}

    @_route("PUT", "/admin/tokens")
    def set_tokens(self, core, body):  # noqa: ANN001,ANN201
        tokens = body.get("tokens")
        if not isinstance(tokens, (list, dict)):
            raise AdminError(400, "field 'tokens' must be a list or an object")
        core.access.set_tokens(tokens)
        return {"tokens": core.access.tokens()}

    @_route("POST", "/admin/faults")
    def add_fault(self, core, body):  # noqa: ANN001,ANN201
        return core.faults.add(body).to_dict()

    @_route("GET", "/admin/faults")
    def list_faults(self, core, body):  # noqa: ANN001,ANN201
        return {"faults": core.faults.list()}

    @_route("DELETE", "/admin/faults")
    def clear_faults(self, core, body):  # noqa: ANN001,ANN201
        core.faults.clear()
        return {}

    @_route("DELETE", "/admin/faults/([0-9]+)")
    def remove_fault(self, core, body, fault_id):  # noqa: ANN001,ANN201
        return {"removed": core.faults.remove(int(fault_id))}

    @_route("GET", "/admin/requests")
    def requests(self, core, body):  # noqa: ANN001,ANN201
        return {"requests": core.journal.requests()}

    @_route("DELETE", "/admin/requests")
    def clear_requests(self, core, body):  # noqa: ANN001,ANN201
        core.journal.clear()
        return {}

    @_route("GET", "/admin/connections")
    def connections(self, core, body):  # noqa: ANN001,ANN201
        return {"connections": core.journal.connections()}

    @_route("GET", "/admin/events")
    def events(self, core, body):  # noqa: ANN001,ANN201
        return {"events": core.store.events()}

    @_route("DELETE", "/admin/events")
    def clear_events(self, core, body):  # noqa: ANN001,ANN201
        core.store.clear_events()
        return {}

    @_route("POST", "/admin/deny")
    def add_deny(self, core, body):  # noqa: ANN001,ANN201
        fields = {k: body.get(k) for k in ("verb", "resource", "namespace", "name", "user")}
        unknown = set(body) - set(fields)
        if unknown:
            raise AdminError(400, f"unknown deny fields: {sorted(unknown)}")
        if any(v is not None and not isinstance(v, str) for v in fields.values()):
            raise AdminError(400, "deny fields are strings or null")
        core.access.add_deny(DenyRule(**fields))
        return {}

    @_route("DELETE", "/admin/deny")
    def clear_deny(self, core, body):  # noqa: ANN001,ANN201
        core.access.clear_deny()
        return {}

    @_route("PUT", "/admin/rbac")
    def set_rbac(self, core, body):  # noqa: ANN001,ANN201
        rules = body.get("rules")
        if rules == "manifold":
            try:
                rules = manifold_rbac()
            except (OSError, ValueError) as err:
                raise AdminError(400, f"cannot read the shipped ClusterRole: {err}") from None
        if rules is not None and not isinstance(rules, list):
            raise AdminError(400, "field 'rules' is a list of ClusterRole rules, "
                                  "\"manifold\" or null")
        core.access.set_rbac(rules)
        return {}

    @_route("PUT", "/admin/options")
    def set_options(self, core, body):  # noqa: ANN001,ANN201
        for key, value in body.items():
            if key not in _OPTION_CHECKS or value is None or not _OPTION_CHECKS[key](value):
                raise AdminError(400, f"unknown option or bad value: {key}={value!r}")
        for key, value in body.items():
            _set_option(core, key, value)
        return _options(core)

    @_route("GET", "/admin/options")
    def get_options(self, core, body):  # noqa: ANN001,ANN201
        return _options(core)

    @_route("POST", "/admin/compact")
    def compact(self, core, body):  # noqa: ANN001,ANN201
        return {"resourceVersion": core.store.compact()}

    @_route("GET", "/admin/watch-history")
    def watch_history(self, core, body):  # noqa: ANN001,ANN201
        return core.store.history()

    @_route("GET", "/admin/watches")
    def watches(self, core, body):  # noqa: ANN001,ANN201
        return {"watches": core.store.watches()}


def _kind(plural: str) -> Kind:
    kind = kind_for_plural(plural)
    if kind is None:
        raise AdminError(404, f"no served kind {plural!r} (try {CLAIMS!r} or {SLICES!r})")
    return kind


def _address(plural: str, first: str, second: Optional[str]) -> tuple[Kind, str, str]:
    """(kind, namespace, name) of /admin/objects/{plural}/{ns}/{name} or …/{plural}/{name}."""
    kind = _kind(plural)
    if kind.resource.namespaced != (second is not None):
        raise AdminError(404, f"{plural} are addressed as /admin/objects/{plural}/"
                              f"{'{namespace}/{name}' if kind.resource.namespaced else '{name}'}")
    return (kind, first, second) if second is not None else (kind, "", first)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_OPTION_CHECKS: dict[str, Callable[[Any], bool]] = {
    "strict_resource_version": lambda v: isinstance(v, bool),
    "bookmark_interval": lambda v: _number(v) and v > 0,
    "watch_timeout": lambda v: _number(v) and v >= 0,
    "watch_history": lambda v: _number(v) and int(v) == v and v >= 0,
    "disabled_groups": lambda v: isinstance(v, list) and all(isinstance(g, str) and g
                                                             for g in v),
    "tls_max_version": lambda v: v in _TLS_VERSIONS,
}
# The newest TLS version the double negotiates: "1.3" (the default) or "1.2", a server that has not
# enabled TLS 1.3. Applies to connections accepted from then on.
_TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


def _set_option(core: Any, key: str, value: Any) -> None:
    if key == "strict_resource_version":
        core.store.strict_resource_version = value
    elif key == "bookmark_interval":
        core.watch_settings.bookmark_interval = float(value)
        core.store.wake_watchers()
    elif key == "watch_timeout":
        core.watch_settings.default_timeout = float(value)
    elif key == "disabled_groups":
        core.routes.set_disabled_groups(value)
    elif key == "tls_max_version":
        core.ssl_context.maximum_version = _TLS_VERSIONS[value]
    else:
        core.store.set_history_limit(int(value))


def _options(core: Any) -> dict:
    return {"strict_resource_version": core.store.strict_resource_version,
            "bookmark_interval": core.watch_settings.bookmark_interval,
            "watch_timeout": core.watch_settings.default_timeout,
            "watch_history": core.store.history_limit(),
            "disabled_groups": sorted(core.routes.disabled_groups),
            "tls_max_version": _tls_max_version(core.ssl_context)}


def _tls_max_version(ctx: ssl.SSLContext) -> str:
    """The option's name for the context's newest version (unset: the newest, "1.3")."""
    names = {version: name for name, version in _TLS_VERSIONS.items()}
    return names.get(ctx.maximum_version, "1.3")
