"""Renders kubeconfig YAML by hand for every variant manifold must accept.

Scalars are written as JSON strings, which are valid YAML double-quoted scalars, so paths and
tokens never need YAML escaping rules of their own. Variants: certificate-authority as a file, as
base64 `-data`, or absent; `insecure-skip-tls-verify`; users with `token`, `tokenFile`, client
certificate/key as files or as `-data`, or no credentials; and an optional decoy context listed
first (with an unreachable server and a bad token) so that only a parser honouring
`current-context` connects.
"""

from __future__ import annotations

import base64
import json
from typing import Optional

AUTH_KINDS = ("token", "tokenFile", "cert", "none")
CA_MODES = ("file", "data", "none")
CERT_FORMS = ("file", "data")


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
                      user: str = "manifold") -> str:
    """Returns the kubeconfig text; raises ValueError for an inconsistent variant."""
    if auth not in AUTH_KINDS:
        raise ValueError(f"auth must be one of {AUTH_KINDS}, not {auth!r}")
    if ca not in CA_MODES:
        raise ValueError(f"ca must be one of {CA_MODES}, not {ca!r}")
    if cert_form not in CERT_FORMS:
        raise ValueError(f"cert_form must be one of {CERT_FORMS}, not {cert_form!r}")
    cluster = [f"    server: {_q(server)}"]
    if ca == "file":
        cluster.append(f"    certificate-authority: {_q(_need(ca_file, 'ca_file'))}")
    elif ca == "data":
        cluster.append(f"    certificate-authority-data: {_b64_file(_need(ca_file, 'ca_file'))}")
    if insecure:
        cluster.append("    insecure-skip-tls-verify: true")
    creds: list[str] = []
    if auth == "token":
        creds.append(f"    token: {_q(_need(token, 'token'))}")
    elif auth == "tokenFile":
        creds.append(f"    tokenFile: {_q(_need(token_file, 'token_file'))}")
    elif auth == "cert":
        cert, key = _need(client_cert, "client_cert"), _need(client_key, "client_key")
        if cert_form == "file":
            creds += [f"    client-certificate: {_q(cert)}", f"    client-key: {_q(key)}"]
        else:
            creds += [f"    client-certificate-data: {_b64_file(cert)}",
                      f"    client-key-data: {_b64_file(key)}"]
    ctx = [f"    cluster: {_q(context)}", f"    user: {_q(user)}"]
    if namespace:
        ctx.append(f"    namespace: {_q(namespace)}")
    clusters, users, contexts = [], [], []
    if decoy:
        clusters.append('- name: "decoy"\n  cluster:\n    server: "https://127.0.0.1:1"\n'
                        '    insecure-skip-tls-verify: true')
        users.append('- name: "decoy"\n  user:\n    token: "decoy-token-must-not-be-used"')
        contexts.append('- name: "decoy"\n  context:\n    cluster: "decoy"\n    user: "decoy"')
    clusters.append(f"- name: {_q(context)}\n  cluster:\n" + "\n".join(cluster))
    users.append(f"- name: {_q(user)}\n  user:" + ("\n" + "\n".join(creds) if creds else " {}"))
    contexts.append(f"- name: {_q(context)}\n  context:\n" + "\n".join(ctx))
    return ("apiVersion: v1\nkind: Config\npreferences: {}\n"
            "clusters:\n" + "\n".join(clusters) + "\n"
            "users:\n" + "\n".join(users) + "\n"
            "contexts:\n" + "\n".join(contexts) + "\n"
            f"current-context: {_q(context)}\n")


def _need(value: Optional[str], name: str) -> str:
    if not value:
        raise ValueError(f"this kubeconfig variant needs {name}")
    return value
