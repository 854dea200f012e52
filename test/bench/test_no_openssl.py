#!/usr/bin/env python3
"""Verbs that do not talk to Kubernetes never touch OpenSSL.

Creating an SSL_CTX costs about 2 ms and loading a trust store about 28 ms on a node, so TLS state
is built only when an API request is actually sent. This test runs manifold (MANIFOLD_BIN, a build
with symbols) under valgrind's callgrind, which lists every function that executed at least one
instruction, for VERSION and for ADD, CHECK and DEL through a bridge delegate without Kubernetes,
and fails if any OpenSSL function ran other than libcrypto's load-time CPU probe (which runs
before main in every program linking libcrypto and calls no API). As a positive control, an ADD
that looks its pod up in the API server double must show the TLS set-up (SSL_CTX_new, the
handshake), which proves the detector sees OpenSSL when it is used; the same ADD with its API
requests handed to a running `manifold agent` (its relay) runs none. Needs root and valgrind.
"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

import bench  # noqa: E402
from harness import ci  # noqa: E402

# OpenSSL's exported and internal function name families.
OPENSSL_FUNCTION = re.compile(
    r"^(SSL_|SSL3_|TLS_|tls_|ssl_|ssl3_|EVP_|X509|x509_|PEM_|BIO_|ERR_|CRYPTO_|OPENSSL_|OSSL_|ossl_|"
    r"RAND_|BN_|EC_|RSA_|ASN1_|d2i_|i2d_|OBJ_|CONF_|ENGINE_|PKCS|HMAC|SHA\d|MD5)")
# libcrypto's ELF initialiser: CPU feature detection, no OpenSSL state, no API call.
ALLOWED = {"OPENSSL_cpuid_setup", "OPENSSL_ia32_cpuid"}
# What the positive control must show.
TLS_SETUP = {"SSL_CTX_new", "SSL_CTX_new_ex", "SSL_do_handshake", "SSL_connect"}


def executed_functions(callgrind_file):
    """Names of every function callgrind recorded (it only records functions that ran)."""
    names = set()
    pattern = re.compile(r"^c?fn=\(\d+\)(?: (.*))?$")
    with open(callgrind_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = pattern.match(line.rstrip("\n"))
            if m and m.group(1):
                name = m.group(1)
                # C++ names: keep the unqualified function name's prefix for matching, drop args.
                names.add(name.split("(")[0].strip())
    return names


def openssl_functions(names):
    return sorted(n for n in names if OPENSSL_FUNCTION.match(n) and n not in ALLOWED)


class NoOpenSslTest(unittest.TestCase):
    """One world (node, pod, directories) for all tests; the double only for the control."""

    @classmethod
    def setUpClass(cls):
        cls.stack = contextlib.ExitStack()
        args = bench.parse_args(["--quick", "--manifold", os.environ["MANIFOLD_BIN"],
                                 "--driver", os.environ.get("CNI_DRIVER", "/bin/true")])
        cls.world = bench.World(cls.stack, args)
        cls.out_dir = cls.world.mkdir("callgrind")

    @classmethod
    def tearDownClass(cls):
        cls.stack.close()

    def callgrind(self, label, command, conf=None, args=None, stdin=None):
        """Runs manifold under callgrind; returns the names of the functions that executed."""
        out = os.path.join(self.out_dir, label + ".out")
        env = bench.cni_env(command, self.world.pod.path, args=args)
        if command == "VERSION":
            env = bench.base_env()
            env["CNI_COMMAND"] = "VERSION"
        data = stdin if stdin is not None else json.dumps(conf)
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                               self.world.manifold], input=data.encode(), env=env,
                              capture_output=True, timeout=600)
        self.assertEqual(proc.returncode, 0, "%s under callgrind failed:\n%s\n%s" % (
            label, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")[-4000:]))
        names = executed_functions(out)
        self.assertIn("main", names, "callgrind recorded no symbols: is MANIFOLD_BIN stripped?")
        return names

    def test_verbs_without_kubernetes_never_run_openssl(self):
        conf = self.world.manifold_conf(self.world.mkdir("cache-nossl"), [self.world.bridge_conf()])
        seen = {"VERSION": self.callgrind("version", "VERSION", stdin='{"cniVersion":"1.0.0"}')}
        for verb in ("ADD", "CHECK", "DEL"):
            seen[verb] = self.callgrind(verb.lower(), verb, conf)
        self.world.assert_pod_clean("DEL")
        for verb, names in seen.items():
            self.assertEqual(openssl_functions(names), [], "%s executed OpenSSL functions" % verb)

    def test_control_kubernetes_add_runs_tls_setup(self):
        kube = bench.Kube(self.stack, self.world)
        kube.set_networks(self.world, 0)
        cni_dir = self.world.mkdir("cache-control")
        conf = self.world.manifold_conf(cni_dir, [self.world.bridge_conf()], kubeconfig=kube.kubeconfig)
        names = self.callgrind("k8s-add", "ADD", conf, args=kube.cni_args())
        self.world.run_manifold("DEL", conf, args=kube.cni_args())
        self.world.assert_pod_clean("DEL")
        self.assertTrue(TLS_SETUP & names, "the Kubernetes ADD shows no TLS set-up: the detector is blind")
        self.assertNotEqual(openssl_functions(names), [])

    def test_kubernetes_add_through_the_agent_runs_no_openssl(self):
        kube = bench.Kube(self.stack, self.world)
        kube.set_networks(self.world, 1)
        agent = bench.AgentProcess(self.world, kube, self.world.mkdir("cache-agent"))
        self.addCleanup(agent.stop)
        bench.wait_for_relay(agent)
        cni_dir = self.world.mkdir("cache-relayed")
        conf = self.world.manifold_conf(cni_dir, [self.world.bridge_conf()], kubeconfig=kube.kubeconfig,
                                        agentSocket=agent.relay_socket)
        names = self.callgrind("k8s-add-relayed", "ADD", conf, args=kube.cni_args())
        self.world.run_manifold("DEL", conf, args=kube.cni_args())
        self.world.assert_pod_clean("DEL")
        self.assertEqual(openssl_functions(names), [], "a Kubernetes ADD through the agent executed OpenSSL")
        samples = agent.metrics()
        self.assertGreaterEqual(samples.get(bench.RELAY_ANSWERED, 0), 2, "the ADD did not go through the agent")
        self.assertEqual(samples.get(bench.RELAY_REFUSED, 0), 0)


def main():
    if os.geteuid() != 0:
        ci.cannot_run("needs root (network namespaces)")
    if not shutil.which("valgrind"):
        print("error: valgrind is not installed (apt-get install valgrind)")
        sys.exit(2)
    if not os.environ.get("MANIFOLD_BIN"):
        print("error: MANIFOLD_BIN is not set (run through ctest)")
        sys.exit(2)
    bench.remove_stale_namespaces()
    ci.run_unittest()


if __name__ == "__main__":
    main()
