"""Content negotiation: which representation an Accept header gets, as kube-apiserver decides it.

Accept is an ordered list of clauses and the server serves the first one it can produce. A clause
may ask for a conversion with parameters: `as=Table;g=meta.k8s.io;v=v1` (server-side printing, what
`kubectl get` asks for) or `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2` (aggregated
discovery). A conversion the server lacks makes it skip that clause, which is how clients fall
back to plain JSON. The double produces JSON, and Table for reads of resources; never protobuf or
YAML.
"""

from __future__ import annotations

from typing import Optional

JSON = "json"
TABLE_V1 = "meta.k8s.io/v1"
TABLE_V1BETA1 = "meta.k8s.io/v1beta1"
_JSON_TYPES = ("application/json", "application/*", "*/*")
_TABLE_VERSIONS = {"v1": TABLE_V1, "v1beta1": TABLE_V1BETA1}


def media_type(header: Optional[str]) -> str:
    """The media type of a Content-Type or Accept clause, lower-case, without parameters."""
    return (header or "").split(";", 1)[0].strip().lower()


def _parameters(clause: str) -> dict[str, str]:
    params = {}
    for part in clause.split(";")[1:]:
        key, _, value = part.partition("=")
        params[key.strip().lower()] = value.strip()
    return params


def negotiate(accept: Optional[str], table_ok: bool) -> Optional[str]:
    """JSON, the apiVersion of the Table to serve (TABLE_V1 / TABLE_V1BETA1), or None for 406.
    `table_ok` says whether this request (a resource read) can be served as a Table."""
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
    return None
