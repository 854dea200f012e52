"""Validation of objects written to the double, worded as kube-apiserver words its refusals.

A body must decode the way Go's JSON decoder would decode it into the typed object (a wrong type is
a 400 naming the Go struct field, e.g. `cannot unmarshal array into Go struct field
ObjectMeta.metadata.annotations of type map[string]string`), and annotations must pass
ValidateAnnotations (qualified-name keys, 256 KiB in total; a 422 otherwise). The store calls these
for every update, whether it came as a PUT or as the result of a PATCH.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from . import k8s_status as st

ANNOTATIONS_SIZE_LIMIT = 256 * 1024

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_PREFIX_RE = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _go_json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"


class DecodeError(Exception):
    """A body that Go's JSON decoder would reject; the message is the decoder's."""


def _decode_failure(kind: str, field: str, value: Any, go_type: str) -> DecodeError:
    owner = "ObjectMeta" if field.startswith("metadata.") else kind
    return DecodeError(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot '
                       f'unmarshal {_go_json_type(value)} into Go struct field {owner}.{field} '
                       f'of type {go_type}')


def _check_str_map(kind: str, field: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise _decode_failure(kind, field, value, "map[string]string")
    for v in value.values():
        if not isinstance(v, str):
            raise _decode_failure(kind, field, v, "string")


def _check_type(kind: str, field: str, value: Any, py_type: type, go_type: str) -> None:
    if value is not None and (not isinstance(value, py_type) or isinstance(value, bool)
                              and py_type is not bool):
        raise _decode_failure(kind, field, value, go_type)


def check_object(kind: str, body: Any) -> dict:
    """Validates the generic shape of a decoded object; raises DecodeError like Go would."""
    if not isinstance(body, dict):
        raise DecodeError(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot '
                          f'unmarshal {_go_json_type(body)} into Go value of type v1.{kind}')
    for key in ("kind", "apiVersion"):
        _check_type(kind, key, body.get(key), str, "string")
    meta = body.get("metadata")
    _check_type(kind, "metadata", meta, dict, "v1.ObjectMeta")
    meta = meta or {}
    for key in ("name", "generateName", "namespace", "uid", "resourceVersion"):
        _check_type(kind, f"metadata.{key}", meta.get(key), str, "string")
    _check_str_map(kind, "metadata.labels", meta.get("labels"))
    _check_str_map(kind, "metadata.annotations", meta.get("annotations"))
    for key in ("spec", "status"):
        _check_type(kind, key, body.get(key), dict, f"v1.{kind}{key.capitalize()}")
    return meta


def validate_annotations(kind: str, name: str, annotations: dict) -> Optional[dict]:
    """Returns a 422 Status when annotations break ValidateAnnotations, else None."""
    total = 0
    for key, value in annotations.items():
        total += len(key.encode()) + len(value.encode())
        prefix, _, part = key.rpartition("/")
        if "/" in key and (not prefix or len(prefix) > 253 or not _PREFIX_RE.match(prefix)):
            return st.invalid(kind, name, "metadata.annotations", "FieldValueInvalid",
                              f'Invalid value: "{key}": prefix part a lowercase RFC 1123 '
                              f'subdomain must consist of lower case alphanumeric characters, '
                              f"'-' or '.', and must start and end with an alphanumeric character")
        if not part or len(part) > 63 or not _NAME_RE.match(part):
            return st.invalid(kind, name, "metadata.annotations", "FieldValueInvalid",
                              f'Invalid value: "{key}": name part must consist of alphanumeric '
                              f"characters, '-', '_' or '.', and must start and end with an "
                              f"alphanumeric character, and be at most 63 characters")
    if total > ANNOTATIONS_SIZE_LIMIT:
        return st.invalid(kind, name, "metadata.annotations", "FieldValueTooLong",
                          f"Too long: must have at most {ANNOTATIONS_SIZE_LIMIT} bytes")
    return None
