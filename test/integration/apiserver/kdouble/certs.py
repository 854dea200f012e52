"""Generates the double's PKI with the `openssl` command-line tool.

A test run gets a fresh certificate authority, a server certificate valid for 127.0.0.1, ::1 and
localhost (plus the in-cluster `kubernetes.default.svc` names), and a client certificate signed by
the CA whose CN is the service-account user manifold runs as. A second, unrelated CA with its own
client certificate is generated too, so tests can prove that untrusted peers are rejected in both
directions. Private keys are written mode 0600.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from dataclasses import asdict, dataclass
from typing import Optional

DEFAULT_CLIENT_CN = "system:serviceaccount:kube-system:manifold"
SERVER_SANS = ("IP:127.0.0.1", "IP:::1", "DNS:localhost", "DNS:kubernetes",
               "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
               "DNS:kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class Pki:
    """Paths of every PEM file the double generated."""
    ca_cert: str
    ca_key: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str
    other_ca_cert: str
    untrusted_client_cert: str
    untrusted_client_key: str

    def to_dict(self) -> dict:
        """Returns the paths as a JSON-ready dict."""
        return asdict(self)


class PkiError(RuntimeError):
    """Raised when an openssl invocation fails; carries openssl's stderr."""


def _openssl(*args: str) -> None:
    proc = subprocess.run(["openssl", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise PkiError(f"openssl {args[0]} failed ({proc.returncode}): {proc.stderr.strip()}")


def _write(path: str, text: str) -> str:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return path


def _new_key(path: str, key_type: str) -> str:
    if key_type == "rsa":
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
    elif key_type == "ec":
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", path)
    else:
        raise PkiError(f"unknown key type {key_type!r} (expected 'ec' or 'rsa')")
    os.chmod(path, 0o600)
    return path


def _req_config(directory: str, name: str, common_name: str) -> str:
    # Our own minimal config so the system openssl.cnf cannot add or duplicate extensions.
    cn = common_name.replace("\\", "\\\\").replace('"', '\\"')
    return _write(os.path.join(directory, f"{name}.cnf"),
                  "[req]\nprompt = no\ndistinguished_name = dn\n"
                  f'[dn]\nCN = "{cn}"\n'
                  "[v3_ca]\nbasicConstraints = critical,CA:TRUE\n"
                  "keyUsage = critical,keyCertSign,cRLSign,digitalSignature\n"
                  "subjectKeyIdentifier = hash\n")


def _new_ca(directory: str, name: str, common_name: str, key_type: str) -> tuple[str, str]:
    key = _new_key(os.path.join(directory, f"{name}.key"), key_type)
    cert = os.path.join(directory, f"{name}.crt")
    cnf = _req_config(directory, name, common_name)
    _openssl("req", "-x509", "-new", "-config", cnf, "-extensions", "v3_ca", "-key", key,
             "-sha256", "-days", "3650", "-out", cert)
    return cert, key


def _new_leaf(directory: str, name: str, common_name: str, ca: tuple[str, str], key_type: str,
              extensions: str) -> tuple[str, str]:
    key = _new_key(os.path.join(directory, f"{name}.key"), key_type)
    cert = os.path.join(directory, f"{name}.crt")
    csr = os.path.join(directory, f"{name}.csr")
    cnf = _req_config(directory, name, common_name)
    ext = _write(os.path.join(directory, f"{name}.ext"),
                 "[v3]\nbasicConstraints = critical,CA:FALSE\n"
                 "authorityKeyIdentifier = keyid\nsubjectKeyIdentifier = hash\n" + extensions)
    _openssl("req", "-new", "-config", cnf, "-key", key, "-out", csr)
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1],
             "-set_serial", "0x" + secrets.token_hex(16), "-days", "825", "-sha256",
             "-extfile", ext, "-extensions", "v3", "-out", cert)
    for leftover in (csr, cnf, ext):
        os.unlink(leftover)
    return cert, key


def generate_pki(directory: str, client_cn: str = DEFAULT_CLIENT_CN,
                 key_type: str = "ec") -> Pki:
    """Creates all certificates and keys in `directory` (created if missing) and returns them."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    ca = _new_ca(directory, "ca", "manifold-test-ca", key_type)
    server = _new_leaf(directory, "server", "kube-apiserver", ca, key_type,
                       "keyUsage = critical,digitalSignature,keyEncipherment\n"
                       "extendedKeyUsage = serverAuth\n"
                       f"subjectAltName = {','.join(SERVER_SANS)}\n")
    client_ext = ("keyUsage = critical,digitalSignature,keyEncipherment\n"
                  "extendedKeyUsage = clientAuth\n")
    client = _new_leaf(directory, "client", client_cn, ca, key_type, client_ext)
    other_ca = _new_ca(directory, "other-ca", "untrusted-test-ca", key_type)
    untrusted = _new_leaf(directory, "untrusted-client", client_cn, other_ca, key_type,
                          client_ext)
    for leftover in ("ca.cnf", "other-ca.cnf"):
        os.unlink(os.path.join(directory, leftover))
    return Pki(ca_cert=ca[0], ca_key=ca[1], server_cert=server[0], server_key=server[1],
               client_cert=client[0], client_key=client[1], other_ca_cert=other_ca[0],
               untrusted_client_cert=untrusted[0], untrusted_client_key=untrusted[1])


def certificate_cn(cert: Optional[dict]) -> Optional[str]:
    """The subject CN of a peer certificate as ssl.getpeercert() returns it, or None."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None
