"""Authentication and authorization of the double, modelled on kube-apiserver's chain.

Authentication tries the client certificate first (verified against the double's CA during the
TLS handshake; the user is the certificate's CN), then the bearer token (a mutable token → user
table, so tests can rotate tokens; plus a fixed admin token for an operator's kubectl). A token may
be bound to a pod, as a projected service-account token is: like kube-apiserver, the double accepts
it only while that pod exists with the same UID. Anything else is 401. Authorization then applies, in order: deny rules added by tests (to provoke a 403 on
one verb/resource), and, when enabled, an RBAC allow-list in ClusterRole form, evaluated as the
RBAC authorizer does for any group and resource (`*`, `*/subresource`, resourceNames;
`manifold_rbac()` is the role manifold ships, read from conf/rbac.yaml each time it is asked for).
The admin user is allowed everything, like a member of `system:masters`, whose requests no
authorizer sees.
`RequestInfo` mirrors the apiserver's request-info resolver: it turns a URL and method into
verb/group/resource/namespace/name/subresource.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Union
from urllib.parse import parse_qs

from . import k8s_status as st
from .certs import DEFAULT_CLIENT_CN
from .cluster_role import RULE_KEYS, load_cluster_role


def manifold_rbac() -> list[dict]:
    """The rules of the ClusterRole manifold ships (conf/rbac.yaml, read now): whatever it
    grants, e.g. resource.k8s.io's resourceclaims and resourceslices, the double then allows."""
    return load_cluster_role()


# The operator identity of the admin token (the user kubeadm's admin.conf certificate names).
ADMIN_USER = "kubernetes-admin"

# Non-resource URLs every authenticated user may GET (system:discovery / system:public-info-viewer).
_DISCOVERY_PATHS = ("/api", "/api/*", "/apis", "/apis/*", "/version", "/version/",
                    "/healthz", "/livez", "/readyz", "/openapi/*")


@dataclass
class RequestInfo:
    """What a request addresses, as the apiserver's RequestInfoResolver computes it."""
    path: str
    verb: str
    is_resource: bool = False
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    extra_parts: list = field(default_factory=list)

    @property
    def full_resource(self) -> str:
        """`resource` or `resource/subresource`, as RBAC rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def resolve_request(method: str, path: str, query: str) -> RequestInfo:
    """Parses a request line into a RequestInfo (resource or non-resource)."""
    method = method.upper()
    parts = [p for p in path.strip("/").split("/") if p] if path != "/" else []
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(path=path, verb=method.lower())
    info = RequestInfo(path=path, verb="", is_resource=True, group=group, version=version)
    if len(rest) >= 2 and rest[0] == "namespaces":
        # /namespaces/{ns}/{resource}...; /namespaces/{ns}[/status] addresses the namespace.
        info.namespace = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    if rest:
        info.resource = rest[0]
    if len(rest) >= 2:
        info.name = rest[1]
    if len(rest) >= 3:
        info.subresource = rest[2]
    info.extra_parts = rest[3:]
    if not info.resource:
        info.is_resource = False
        info.verb = method.lower()
        return info
    watch = parse_qs(query).get("watch", [""])[-1] in ("1", "true")
    if method in ("GET", "HEAD"):
        info.verb = "watch" if watch else ("get" if info.name else "list")
    else:
        info.verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                     "DELETE": "delete" if info.name else "deletecollection"}.get(
                         method, method.lower())
    return info


@dataclass
class DenyRule:
    """A test-provided 403: every set field must match; None matches anything."""
    verb: Optional[str] = None
    resource: Optional[str] = None
    namespace: Optional[str] = None
    name: Optional[str] = None
    user: Optional[str] = None

    def matches(self, info: RequestInfo, user: str) -> bool:
        """True when the rule applies to this request."""
        checks = ((self.verb, info.verb), (self.resource, info.full_resource if info.is_resource
                                           else info.path),
                  (self.namespace, info.namespace), (self.name, info.name), (self.user, user))
        return all(want is None or want == have for want, have in checks)


class AccessControl:
    """Token table, deny rules and optional RBAC allow-list, all changeable at runtime."""

    def __init__(self, tokens: Iterable[str], user: str = DEFAULT_CLIENT_CN,
                 admin_token: Optional[str] = None) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}
        self._bound: dict[str, tuple[str, str, Optional[str]]] = {}  # token → (ns, pod, uid)
        self.admin_token = admin_token
        self._deny: list[DenyRule] = []
        self._rbac: Optional[list[dict]] = None
        self.default_user = user
        self.set_tokens(list(tokens))

    def set_tokens(self, tokens: Union[list, dict]) -> None:
        """Replaces the valid tokens: a list (all map to the default user) or token → user, where
        a user may be {"user": U, "boundPod": {"namespace", "name", "uid" (optional)}}: a token
        valid only while that pod exists (with that UID)."""
        table = dict(tokens) if isinstance(tokens, dict) else {t: self.default_user for t in tokens}
        users: dict[str, str] = {}
        bound: dict[str, tuple[str, str, Optional[str]]] = {}
        for token, user in table.items():
            if isinstance(user, dict):
                pod = user.get("boundPod")
                if not isinstance(pod, dict) or not all(
                        isinstance(pod.get(k), str) and pod[k] for k in ("namespace", "name")):
                    raise ValueError("boundPod must name a pod's namespace and name")
                bound[token] = (pod["namespace"], pod["name"], pod.get("uid"))
                user = user.get("user", self.default_user)
            if not isinstance(token, str) or not token or not isinstance(user, str) or not user:
                raise ValueError("tokens and users must be non-empty strings")
            users[token] = user
        with self._lock:
            self._tokens = users
            self._bound = bound

    def tokens(self) -> dict[str, str]:
        """Returns the token → user table."""
        with self._lock:
            return dict(self._tokens)

    def authenticate(self, cert_user: Optional[str], authorization: Optional[str],
                     get_pod: Optional[Callable[[str, str], Optional[dict]]] = None) \
            -> tuple[str, Optional[str]]:
        """Returns (credential kind presented, authenticated user or None). get_pod(ns, name)
        looks up the pod a bound token names."""
        token = None
        if authorization:
            parts = authorization.strip().split(" ")
            if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1]:
                token = parts[1]
        kinds = [k for k, present in (("cert", cert_user), ("token", authorization)) if present]
        kind = "+".join(kinds) if kinds else "none"
        if cert_user:
            return kind, cert_user
        if token and token == self.admin_token:
            return kind, ADMIN_USER
        with self._lock:
            user = self._tokens.get(token) if token else None
            binding = self._bound.get(token) if token else None
        if user and binding and get_pod is not None:
            pod = get_pod(binding[0], binding[1])
            if pod is None or binding[2] not in (None, pod.get("metadata", {}).get("uid")):
                return kind, None
        return kind, user

    def add_deny(self, rule: DenyRule) -> None:
        """Adds a 403 rule."""
        with self._lock:
            self._deny.append(rule)

    def clear_deny(self) -> None:
        """Removes every 403 rule."""
        with self._lock:
            self._deny.clear()

    def set_rbac(self, rules: Optional[list[dict]]) -> None:
        """Enables an RBAC allow-list (ClusterRole `rules` form) or disables it with None."""
        if rules is not None:
            for rule in rules:
                if not isinstance(rule, dict) or not all(
                        isinstance(rule.get(k, []), list) for k in RULE_KEYS):
                    raise ValueError("each RBAC rule is an object of string lists")
        with self._lock:
            self._rbac = [dict(r) for r in rules] if rules is not None else None

    def _rbac_allows(self, info: RequestInfo) -> bool:
        assert self._rbac is not None
        if not info.is_resource:
            if info.verb == "get" and any(fnmatch.fnmatchcase(info.path, p)
                                          for p in _DISCOVERY_PATHS):
                return True
            return any(_any_match(r.get("verbs", []), info.verb) and
                       any(fnmatch.fnmatchcase(info.path, p) for p in r.get("nonResourceURLs", []))
                       for r in self._rbac)
        return any(_any_match(r.get("verbs", []), info.verb) and
                   _any_match(r.get("apiGroups", []), info.group) and
                   _resource_match(r.get("resources", []), info) and
                   (not r.get("resourceNames") or info.name in r["resourceNames"])
                   for r in self._rbac)

    def authorize(self, info: RequestInfo, user: str) -> Optional[dict]:
        """Returns the real 403 Status when the request is denied, else None."""
        if user == ADMIN_USER:
            return None
        with self._lock:
            denied = any(rule.matches(info, user) for rule in self._deny) or (
                self._rbac is not None and not self._rbac_allows(info))
        if not denied:
            return None
        if not info.is_resource:
            return st.forbidden_path(user, info.verb, info.path)
        return st.forbidden(user, info.verb, info.resource, info.subresource, info.group,
                            info.namespace, info.name)


def _any_match(allowed: list, value: str) -> bool:
    return "*" in allowed or value in allowed


def _resource_match(allowed: list, info: RequestInfo) -> bool:
    """RBAC's ResourceMatches: `*`, the exact `resource[/subresource]`, or `*/subresource`."""
    return _any_match(allowed, info.full_resource) or \
        bool(info.subresource) and f"*/{info.subresource}" in allowed
