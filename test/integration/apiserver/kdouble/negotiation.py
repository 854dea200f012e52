"""Content negotiation: which representation an Accept header gets, as kube-apiserver decides it.

Accept is an ordered list of clauses and the server serves the first one it can produce. A clause
may ask for a conversion with parameters: `as=Table;g=meta.k8s.io;v=v1` (server-side printing, what
`kubectl get` asks for) or `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2` (aggregated
discovery). A conversion the server lacks makes it skip that clause, which is how clients fall
back to plain JSON. The double produces JSON, and Table for reads of resources; never protobuf or
YAML.
A metadata-only client asks for `as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` on a LIST and
`as=PartialObjectMetadata;…` on a GET or WATCH: each object then carries only its metadata
(`to_partial`), which is how an agent watching every pod of a large cluster keeps little.
"""

from __future__ import annotations

from typing import Optional

JSON = "json"
TABLE_V1 = "meta.k8s.io/v1"
TABLE_V1BETA1 = "meta.k8s.io/v1beta1"
_JSON_TYPES = ("application/json", "application/*", "*/*")
_TABLE_VERSIONS = {"v1": TABLE_V1, "v1beta1": TABLE_V1BETA1}
PARTIAL_PREFIX = "partial:"  # a form "partial:meta.k8s.io/v1": PartialObjectMetadata of that version


def media_type(header: Optional[str]) -> str:
    """The media type of a Content-Type or Accept clause, lower-case, without parameters."""
    return (header or "").split(";", 1)[0].strip().lower()


def _parameters(clause: str) -> dict[str, str]:
    params = {}
    for part in clause.split(";")[1:]:
        key, _, value = part.partition("=")
        params[key.strip().lower()] = value.strip()
    return params


def negotiate(accept: Optional[str], table_ok: bool, list_request: bool = False) -> Optional[str]:
    """JSON, the apiVersion of the Table to serve (TABLE_V1 / TABLE_V1BETA1), PARTIAL_PREFIX +
    the PartialObjectMetadata apiVersion, or None for 406. `table_ok` says whether this request (a
    resource read) can be converted; `list_request` that it is a LIST (PartialObjectMetadataList)."""
    if not accept:
        return JSON
    for clause in accept.split(","):
        if media_type(clause) not in _JSON_TYPES:
            continue
        params = _parameters(clause)
        conversion = params.get("as")
        if conversion is None:
            return JSON
        if conversion == "Table" and table_ok and params.get("g") == "meta.k8s.io" \
                and params.get("v") in _TABLE_VERSIONS:
            return _TABLE_VERSIONS[params["v"]]
        partial = "PartialObjectMetadataList" if list_request else "PartialObjectMetadata"
        if conversion == partial and table_ok and params.get("g") == "meta.k8s.io" \
                and params.get("v") in _TABLE_VERSIONS:
            return PARTIAL_PREFIX + _TABLE_VERSIONS[params["v"]]
    return None


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def to_partial(obj: dict, form: str) -> dict:
    """An object (or a `…List`) as PartialObjectMetadata (List) of the form's version: metadata
    only, as kube-apiserver converts it."""
    version = form[len(PARTIAL_PREFIX):]
    if str(obj.get("kind", "")).endswith("List"):
        items = obj.get("items") if isinstance(obj.get("items"), list) else []
        return {"kind": "PartialObjectMetadataList", "apiVersion": version,
                "metadata": _dict(obj.get("metadata")),
                "items": [to_partial(_dict(item), form) for item in items]}
    return {"kind": "PartialObjectMetadata", "apiVersion": version, "metadata": _dict(obj.get("metadata"))}
