"""Renders kubeconfig YAML by hand for every variant manifold must accept, or its JSON form.

Scalars are written as JSON strings, which are valid YAML double-quoted scalars, so paths and
tokens never need YAML escaping rules of their own. Variants: certificate-authority as a file, as
base64 `-data`, or absent; `insecure-skip-tls-verify`; users with `token`, `tokenFile`, client
certificate/key as files or as `-data`, or no credentials; and an optional decoy context listed
first (with an unreachable server and a bad token) so that only a parser honouring
`current-context` connects. fmt="json" writes the same document as JSON (YAML's subset: what
`manifold install` writes, and what manifold reads without yaml-cpp's scanner).
"""

from __future__ import annotations

import base64
import json
from typing import Optional

AUTH_KINDS = ("token", "tokenFile", "cert", "none")
CA_MODES = ("file", "data", "none")
CERT_FORMS = ("file", "data")
FORMATS = ("yaml", "json")


def _q(value: str) -> str:
    return json.dumps(value)


def _b64_file(path: str) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


def render_kubeconfig(server: str, *, auth: str = "token", ca: str = "file",
                      ca_file: Optional[str] = None, token: Optional[str] = None,
                      token_file: Optional[str] = None, client_cert: Optional[str] = None,
                      client_key: Optional[str] = None, cert_form: str = "file",
                      insecure: bool = False, decoy: bool = False,
                      namespace: Optional[str] = None, context: str = "double",
                      user: str = "manifold", fmt: str = "yaml") -> str:
    """Returns the kubeconfig text; raises ValueError for an inconsistent variant."""
    if auth not in AUTH_KINDS:
        raise ValueError(f"auth must be one of {AUTH_KINDS}, not {auth!r}")
    if ca not in CA_MODES:
        raise ValueError(f"ca must be one of {CA_MODES}, not {ca!r}")
    if cert_form not in CERT_FORMS:
        raise ValueError(f"cert_form must be one of {CERT_FORMS}, not {cert_form!r}")
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    cluster: dict = {"server": server}
    if ca == "file":
        cluster["certificate-authority"] = _need(ca_file, "ca_file")
    elif ca == "data":
        cluster["certificate-authority-data"] = _b64_file(_need(ca_file, "ca_file"))
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    creds: dict = {}
    if auth == "token":
        creds["token"] = _need(token, "token")
    elif auth == "tokenFile":
        creds["tokenFile"] = _need(token_file, "token_file")
    elif auth == "cert":
        cert, key = _need(client_cert, "client_cert"), _need(client_key, "client_key")
        if cert_form == "file":
            creds.update({"client-certificate": cert, "client-key": key})
        else:
            creds.update({"client-certificate-data": _b64_file(cert), "client-key-data": _b64_file(key)})
    ctx = {"cluster": context, "user": user}
    if namespace:
        ctx["namespace"] = namespace
    clusters, users, contexts = [], [], []
    if decoy:
        clusters.append({"name": "decoy", "cluster": {"server": "https://127.0.0.1:1",
                                                      "insecure-skip-tls-verify": True}})
        users.append({"name": "decoy", "user": {"token": "decoy-token-must-not-be-used"}})
        contexts.append({"name": "decoy", "context": {"cluster": "decoy", "user": "decoy"}})
    clusters.append({"name": context, "cluster": cluster})
    users.append({"name": user, "user": creds})
    contexts.append({"name": context, "context": ctx})
    document = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": clusters,
                "users": users, "contexts": contexts, "current-context": context}
    if fmt == "json":
        return json.dumps(document, indent=2) + "\n"
    return "".join(_yaml_lines(document, 0))


def _yaml_lines(mapping: dict, indent: int):
    """The block-style YAML lines of `mapping` (values: strings, True, mappings, lists of
    mappings). Strings are JSON-quoted, except base64 `-data` values and the two type words."""
    pad = " " * indent
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            yield f"{pad}{key}:\n"
            yield from _yaml_lines(value, indent + 2)
        elif isinstance(value, dict):
            yield f"{pad}{key}: {{}}\n"
        elif isinstance(value, list):
            yield f"{pad}{key}:\n"
            for item in value:
                lines = list(_yaml_lines(item, indent + 2))
                yield pad + "- " + lines[0][indent + 2:]
                yield from lines[1:]
        elif value is True:
            yield f"{pad}{key}: true\n"
        elif key.endswith("-data") or key in ("apiVersion", "kind"):
            yield f"{pad}{key}: {value}\n"
        else:
            yield f"{pad}{key}: {_q(value)}\n"


def _need(value: Optional[str], name: str) -> str:
    if not value:
        raise ValueError(f"this kubeconfig variant needs {name}")
    return value
