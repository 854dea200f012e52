"""Builders for Kubernetes `Status` error objects, worded exactly as kube-apiserver words them.

Clients such as manifold parse `reason`, `code` and `message` out of these bodies and show the
message to users, so the double must produce the same field set, key order and text as the real
server (k8s.io/apimachinery/pkg/api/errors). Every builder returns a plain dict ready for
json.dumps.
"""

from __future__ import annotations

from typing import Any, Optional


def qualified_resource(resource: str, group: str) -> str:
    """Returns `resource` or `resource.group`, as Kubernetes prints a GroupResource."""
    return f"{resource}.{group}" if group else resource


def details(name: Optional[str] = None, resource: Optional[str] = None, group: str = "",
            **extra: Any) -> dict:
    """Returns a StatusDetails dict with the real key order: name, group, kind, then extras."""
    out: dict = {}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    if resource:
        out["kind"] = resource
    out.update(extra)
    return out


def status(code: int, reason: str, message: str, det: Optional[dict] = None) -> dict:
    """Returns a Failure Status; `det=None` omits `details` like an unset Go pointer."""
    out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason}
    if det is not None:
        out["details"] = det
    out["code"] = code
    return out


def unauthorized() -> dict:
    """401 returned when no authenticator accepted the request."""
    return status(401, "Unauthorized", "Unauthorized")


def not_found(resource: str, name: str, group: str = "") -> dict:
    """404 for a named object that does not exist, e.g. `pods "x" not found`."""
    return status(404, "NotFound", f'{qualified_resource(resource, group)} "{name}" not found',
                  details(name, resource, group))


def path_not_found() -> dict:
    """404 for a URL that names no served resource."""
    return status(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed() -> dict:
    """405 for a served resource that does not support the request's verb."""
    return status(405, "MethodNotAllowed",
                  "the server does not allow this method on the requested resource", {})


def conflict_modified(resource: str, name: str, group: str = "") -> dict:
    """409 for an update whose resourceVersion is not the stored one."""
    return status(409, "Conflict",
                  f'Operation cannot be fulfilled on {qualified_resource(resource, group)} '
                  f'"{name}": the object has been modified; please apply your changes to the '
                  f'latest version and try again',
                  details(name, resource, group))


def conflict_uid(resource: str, name: str, want_uid: str, have_uid: str, group: str = "") -> dict:
    """409 for an update whose metadata.uid differs from the stored object's."""
    return status(409, "Conflict",
                  f'Operation cannot be fulfilled on {qualified_resource(resource, group)} '
                  f'"{name}": Precondition failed: UID in precondition: {want_uid}, '
                  f'UID in object meta: {have_uid}',
                  details(name, resource, group))


def already_exists(resource: str, name: str, group: str = "") -> dict:
    """409 for a create of a name that is taken."""
    return status(409, "AlreadyExists",
                  f'{qualified_resource(resource, group)} "{name}" already exists',
                  details(name, resource, group))


def forbidden(user: str, verb: str, resource: str, subresource: str, group: str,
              namespace: str, name: str) -> dict:
    """403 worded like the RBAC authorizer's denial of a resource request."""
    qualified = qualified_resource(resource, group)
    subject = f'{qualified} "{name}"' if name else qualified
    full = f"{resource}/{subresource}" if subresource else resource
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    message = (f'{subject} is forbidden: User "{user}" cannot {verb} resource "{full}" '
               f'in API group "{group}"{where}')
    return status(403, "Forbidden", message, details(name, resource, group))


def forbidden_path(user: str, verb: str, path: str) -> dict:
    """403 worded like the RBAC authorizer's denial of a non-resource URL."""
    return status(403, "Forbidden", f'forbidden: User "{user}" cannot {verb} path "{path}"', {})


def too_many_requests(retry_after: Optional[int]) -> dict:
    """429 worded like the API server's flow control rejection."""
    det = details(retryAfterSeconds=retry_after) if retry_after is not None else {}
    return status(429, "TooManyRequests", "Too many requests, please try again later.", det)


WATCH_EXPIRED = "The resourceVersion for the provided watch is too old."
LIST_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter, or use the continue "
                "token in this response to retrieve the remainder of the results. Continuing with "
                "the provided token results in an inconsistent list - objects that were created, "
                "modified, or deleted between the time the first chunk was returned and now may "
                "show up in the list.")


def expired(message: str) -> dict:
    """410 Expired: a resourceVersion or continue token the server no longer has (no details,
    like errors.NewResourceExpired)."""
    return status(410, "Expired", message)


def internal_error(cause: str) -> dict:
    """500 wrapping an internal cause, e.g. an etcd failure."""
    return status(500, "InternalError", f"Internal error occurred: {cause}",
                  details(causes=[{"message": cause}]))


def service_unavailable() -> dict:
    """503 returned while the server (or its storage) cannot serve."""
    return status(503, "ServiceUnavailable",
                  "the server is currently unable to handle the request", {})


def gateway_timeout() -> dict:
    """504 returned when the server gave up waiting for its storage."""
    return status(504, "Timeout", "the server was unable to return a response in the time "
                  "allotted, but may still be processing the request", {})


def bad_request(message: str) -> dict:
    """400 for a body or parameter the server cannot decode."""
    return status(400, "BadRequest", message)


def invalid(kind: str, name: str, field: str, cause_reason: str, cause_message: str) -> dict:
    """422 for an object that decodes but fails validation on one field."""
    return status(422, "Invalid", f'{kind} "{name}" is invalid: {field}: {cause_message}',
                  details(name, None, "", kind=kind,
                          causes=[{"reason": cause_reason, "message": cause_message,
                                   "field": field}]))


def not_acceptable() -> dict:
    """406 when the Accept header names no media type the double can produce."""
    return status(406, "NotAcceptable",
                  "only the following media types are accepted: application/json")


def unsupported_media_type(content_type: str, accepted: tuple = ("application/json",)) -> dict:
    """415 when the request body is not in one of the `accepted` media types."""
    return status(415, "UnsupportedMediaType",
                  f'the body of the request was in an unknown format - accepted media types '
                  f'include: {", ".join(accepted)} (got "{content_type}")')


def entity_too_large(limit: int) -> dict:
    """413 when the request body exceeds the server's limit."""
    return status(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def for_code(code: int, resource: str = "", name: str = "", group: str = "",
             retry_after: Optional[int] = None, verb: str = "") -> dict:
    """Returns the Status the real server would send for an injected failure code (a 410 is
    worded for a watch, etcd's compaction, or for a list, an expired continue token)."""
    if code == 401:
        return unauthorized()
    if code == 404:
        return not_found(resource, name, group) if resource and name else path_not_found()
    if code == 405:
        return method_not_allowed()
    if code == 409:
        return conflict_modified(resource or "pods", name or "unknown", group)
    if code == 410:
        return expired(WATCH_EXPIRED if verb == "watch" else LIST_EXPIRED)
    if code == 429:
        return too_many_requests(retry_after)
    if code == 500:
        return internal_error("etcdserver: request timed out")
    if code == 503:
        return service_unavailable()
    if code == 504:
        return gateway_timeout()
    return status(code, "InternalError" if code >= 500 else "BadRequest",
                  f"injected failure with status {code}", {})
