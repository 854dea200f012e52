#!/usr/bin/env python3
"""The static release binary speaks TLS to the API server with its own OpenSSL build.

The static binary links a TLS-client build of OpenSSL (lib/openssl.cmake: Debian's source package
with every protocol, algorithm and feature an API-server client does not use configured out). The
sanitizer build the other Kubernetes suites drive links the distribution's full shared libssl, so
only this suite proves that what was configured out is really unused: it runs the static binary
(harness/static.py) through the libcni driver against the API server double, with the double's
certificates as ECDSA P-256 keys and then as RSA 2048 keys, over TLS 1.3 and over TLS 1.2 (a
server capped at 1.2), with bearer-token and client-certificate authentication. Each ADD must make
its requests on one verified connection, store a session ticket, and the next invocation must
resume it; a server whose certificate the configured CA did not sign is refused before any request.
`manifold version` must name the TLS library and, when CTest says which source tree the binary was
built from (MANIFOLD_STATIC_OPENSSL_SOURCE), that build.
"""
import functools
import os
import stat
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.dont_write_bytecode = True

from harness import ci, main  # noqa: E402
from harness.static import expected_tls_build, static_binary  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase, api_paths  # noqa: E402

@functools.lru_cache(maxsize=None)
def the_static_binary():
    """The static release binary, looked up (or built: minutes) once per process."""
    return static_binary()


class StaticTlsEcTest(K8sTestCase):
    """ECDSA P-256 certificates (the double's default)."""

    api_key_type = "ec"

    def plugin_binary(self):
        return the_static_binary()

    def add_pod_with_a_network(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        self.write_k8s()

    def assertOneVerifiedConnectionPerAdd(self, tls_version, resumed):
        """The ADD just made: GET pod, GET NAD, PUT status on one connection of that TLS version."""
        log = self.requests()
        self.assertEqual(len(api_paths(log)), 3, log)
        self.assertEqual({e["tls_resumed"] for e in log}, {resumed}, log)
        self.assertEqual({e["user"] for e in log}, {self.api.user}, log)
        connections = [c for c in self.api.connections() if c["requests"] > 0]
        self.assertEqual([(c["tls"], c["tls_version"]) for c in connections], [("ok", tls_version)],
                         connections)

    def full_then_resumed(self, tls_version, auth):
        """Two ADD/DEL cycles: a full handshake storing a 0600 session, then a resumed one."""
        self.add_pod_with_a_network()
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertOneVerifiedConnectionPerAdd(tls_version, resumed=False)
        self.assertEqual({e["auth"] for e in self.requests()}, {auth})
        sessions = self.tree.tls_session_files()
        self.assertEqual(len(sessions), 1, sessions)
        mode = os.stat(os.path.join(self.tree.cni_dir, sessions[0])).st_mode
        self.assertEqual(stat.S_IMODE(mode), 0o600)
        self.assertOk(self.delete())
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertOneVerifiedConnectionPerAdd(tls_version, resumed=True)
        self.assertEqual({e["auth"] for e in self.requests()}, {auth})
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_version_names_the_tls_library_build(self):
        proc = subprocess.run([self.manifold_bin, "version"], capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        tls = [line for line in proc.stdout.splitlines() if line.startswith("TLS: ")]
        self.assertEqual(len(tls), 1, proc.stdout)
        self.assertRegex(tls[0], r"^TLS: OpenSSL 3\.\d+\.\d+ ")
        expected = expected_tls_build()
        if expected is None:
            ci.skip_or_fail(self, "MANIFOLD_STATIC_OPENSSL_SOURCE is not set: the static binary's "
                                  "OpenSSL build is not known to this test")
            return
        self.assertTrue(tls[0].endswith("(%s)" % expected), tls[0])

    def test_token_over_tls13_full_then_resumed(self):
        self.full_then_resumed("TLSv1.3", "token")

    def test_token_over_tls12_full_then_resumed(self):
        self.api.set_options(tls_max_version="1.2")
        self.full_then_resumed("TLSv1.2", "token")

    def test_client_certificate_over_tls13_full_then_resumed(self):
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="cert",
                                                    cert_form="data", ca="data")
        self.full_then_resumed("TLSv1.3", "cert")

    def test_client_certificate_over_tls12_full_then_resumed(self):
        self.api.set_options(tls_max_version="1.2")
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="cert",
                                                    cert_form="file")
        self.full_then_resumed("TLSv1.2", "cert")

    def test_a_server_the_ca_did_not_sign_is_refused(self):
        for cap in ("1.3", "1.2"):
            self.api.set_options(tls_max_version=cap)
            self.api.write_kubeconfig(self.kubeconfig, auth="token")
            with open(self.kubeconfig, encoding="utf-8") as f:
                text = f.read()
            with open(self.kubeconfig, "w", encoding="utf-8") as f:
                f.write(text.replace(self.api.ca_file, self.api.wrong_ca_file))
            self.add_pod({}, name="refused-" + cap.replace(".", ""))
            self.write_k8s()
            add = self.add(name="refused-" + cap.replace(".", ""))
            self.assertCniError(add, 103)
            self.assertErrorMentions(add, "certificate", "rejected")
            self.assertEqual(self.requests(), [], "no request may be sent to an unverified server")
            self.assertEqual(self.tree.tls_session_files(), [], "no session of an unverified server")
            self.assertNothingLeft()


class StaticTlsRsaTest(StaticTlsEcTest):
    """RSA 2048 certificates: RSA-PSS signatures in TLS 1.3, PKCS#1 in TLS 1.2."""

    api_key_type = "rsa"


if __name__ == "__main__":
    main()
