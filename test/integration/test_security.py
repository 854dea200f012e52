#!/usr/bin/env python3
"""Security rules, end to end, one test per rule (rules already proven elsewhere are listed here
and not repeated):

- cache dirs 0700, files 0600 after a real ADD: test_core_lifecycle.test_cache_is_private
  (unit: store "file cache: directories 0700 and files 0600 whatever the umask");
- no bearer token reaches the debug log of any k8s test: k8s_case.K8sTestCase cleanup;
- wrong CA: test_k8s_api.test_an_untrusted_server_certificate_is_a_clear_error;
- namespace isolation, comma form: test_k8s_selection.test_namespace_isolation_violation_creates_nothing.

Here: no token or private key in logs, errors, outputs or network-status; a delegate type that is a
path, holds a NUL or `..` is error 7 and executes nothing (from the config and from a NAD);
isolation also holds for the JSON form and the default-network annotation; oversized input is
rejected with a bound (stdin over 1 MiB, 10,000 networks, interface names of 16 characters); a
server certificate for another host is an error, insecure-skip-tls-verify is logged as a warning;
delegates see only an allow-list of the runtime's environment.
"""
import base64
import json
import os
import re
import secrets
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, main  # noqa: E402
from k8s_case import (DEFAULT_NETWORK, NETWORKS, K8sTestCase, NetnsForwarder,  # noqa: E402
                      _setns, api_paths, pod_path)

ERR_INVALID_ENV = 4
ERR_INVALID_CONFIG = 7
ERR_KUBERNETES = 103
# What manifold passes on from the runtime's environment (lib/exec/plugin_invoker.h).
ALLOWED_ENV = {"PATH", "LD_LIBRARY_PATH", "TMPDIR", "XTABLES_LOCKFILE", "TZ", "LANG", "LANGUAGE"}
CNI_ENV = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"}

EVIL_SCRIPT = "#!/bin/sh\ntouch %s\nexit 0\n"
ENV_DUMP = """#!/usr/bin/python3
import json, os, sys
conf = json.loads(sys.stdin.read() or "{}")
if os.environ.get("CNI_COMMAND") == "VERSION":
    print(json.dumps({"cniVersion": conf.get("cniVersion", "1.0.0"),
                      "supportedVersions": ["0.3.1", "0.4.0", "1.0.0"]}))
    sys.exit(0)
with open(conf["envFile"], "a") as f:
    f.write(json.dumps(dict(os.environ)) + "\\n")
if os.environ.get("CNI_COMMAND") == "ADD":
    prev = conf["prevResult"]
    prev["cniVersion"] = conf["cniVersion"]
    print(json.dumps(prev))
"""


def write_executable(path, text):
    """Writes an executable script."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o755)


class EvilScripts:
    """Executables outside every search directory that prove, by a marker file, whether they ran:
    one in the test's tree (reachable as "../evil" from binDir) and one in /tmp (reachable as
    "../../tmp/<name>")."""

    def __init__(self, testcase):
        tree = testcase.tree
        self.marker = tree.path("evil-ran")
        self.tree_script = tree.path("evil")
        self.tmp_name = "mf-evil-%d-%s" % (os.getpid(), secrets.token_hex(4))
        self.tmp_script = os.path.join("/tmp", self.tmp_name)
        for path in (self.tree_script, self.tmp_script):
            write_executable(path, EVIL_SCRIPT % self.marker)
        testcase.addCleanup(lambda: os.path.exists(self.tmp_script) and os.unlink(self.tmp_script))

    def types(self):
        """Delegate types that would reach one of the scripts if a path were followed."""
        return ["../evil", "../../tmp/" + self.tmp_name, self.tmp_script, self.tree_script,
                "/bin/sh", "a/b", "..", ".", "evil\u0000", "ev\u0000il", "..evil", "evil.."]

    def ran(self):
        """True when any script ran."""
        return os.path.exists(self.marker)


class CoreSecurityTest(ManifoldTestCase):
    """Rules that need no Kubernetes."""

    def test_delegate_type_that_is_a_path_or_holds_nul_or_dots_runs_nothing(self):
        evil = EvilScripts(self)
        for bad_type in evil.types():
            with self.subTest(type=bad_type):
                for in_list in (False, True):
                    bad = self.fake_conf("fake-record", name="bad")
                    if in_list:  # inside a conflist, after a good plugin
                        bad = {"cniVersion": "1.0.0", "name": "badlist",
                               "plugins": [self.fake_conf("fake-record"), {"type": bad_type}]}
                    else:
                        bad["type"] = bad_type
                    self.write_manifold("1.0.0", [self.fake_conf("fake-record", name="first"), bad])
                    add = self.driver("add", self.pod.path, container_id="ctr-sec-type")
                    self.assertCniError(add, ERR_INVALID_CONFIG)
                    self.assertEqual(self.tree.records(), [], "a delegate ran before the check")
                    self.assertFalse(evil.ran(), "a script outside binDir/CNI_PATH ran")
                    self.assertNothingLeft()

    def test_stdin_over_one_mib_is_rejected(self):
        conf = self.manifold_conf("1.0.0", [self.fake_conf("fake-record")])
        conf["padding"] = "x" * (1 << 20)
        run = self.run_manifold("ADD", conf, {"CNI_CONTAINERID": "ctr-sec-big"})
        self.assertCniError(run, ERR_INVALID_CONFIG)
        self.assertIn("1 MiB", run.error["msg"])
        self.assertEqual(self.tree.records(), [])
        self.assertNothingLeft()
        # Just under the bound is accepted (the bound is the size, not something else).
        conf["padding"] = ""
        conf["padding"] = "x" * ((1 << 20) - len(json.dumps(conf)) - 64)
        self.assertLess(len(json.dumps(conf)), 1 << 20)
        run = self.run_manifold("ADD", conf, {"CNI_CONTAINERID": "ctr-sec-big"})
        self.assertOk(run)
        self.assertOk(self.run_manifold("DEL", conf, {"CNI_CONTAINERID": "ctr-sec-big"}))
        self.assertNothingLeft()

    def test_interface_name_of_16_characters_is_rejected(self):
        conf = self.manifold_conf("1.0.0", [self.fake_conf("fake-record")])
        for ifname in ("a" * 16, "eth0-is-too-long", "x" * 4096, "eth/0", "eth 0"):
            with self.subTest(ifname=ifname):
                run = self.run_manifold("ADD", conf, {"CNI_CONTAINERID": "ctr-sec-if",
                                                      "CNI_IFNAME": ifname})
                self.assertCniError(run, ERR_INVALID_ENV)
                self.assertEqual(self.tree.records(), [])
                self.assertNothingLeft()

    def delegate_environments(self, container, runtime_env, **manifold_keys):
        """ADD and DEL of a chain whose second plugin dumps its environment, with the runtime's
        environment extended by runtime_env; returns the ADD's and the DEL's environment."""
        env_file = self.tree.path("env.jsonl")
        write_executable(os.path.join(self.tree.bin_dir, "mf-envdump"), ENV_DUMP)
        chain = {"cniVersion": "1.0.0", "name": "dumped",
                 "plugins": [self.fake_conf("fake-record"), {"type": "mf-envdump", "envFile": env_file}]}
        self.write_manifold("1.0.0", [chain], **manifold_keys)
        for verb in ("add", "del"):
            self.assertOk(self.driver(verb, self.pod.path, container_id=container, extra_env=runtime_env))
        with open(env_file, encoding="utf-8") as f:
            dumps = [json.loads(line) for line in f]
        self.assertEqual([d["CNI_COMMAND"] for d in dumps], ["ADD", "DEL"])
        return dumps

    def test_delegates_see_only_the_allow_listed_environment(self):
        leaky = {"KUBECONFIG": "/etc/kubernetes/admin.conf", "MF_SECRET_TOKEN": "sekrit-7d1f",
                 "HTTPS_PROXY": "http://user:pw@proxy.invalid:3128", "HOME": "/root",
                 "GODEBUG": "x509ignoreCN=0", "LC_ALL": "C.UTF-8", "TZ": "UTC"}
        for env in self.delegate_environments("ctr-sec-env", leaky):
            names = set(env)
            extra = {n for n in names - ALLOWED_ENV - CNI_ENV if not n.startswith("LC_")}
            self.assertEqual(extra, set(), "variables a delegate must not see")
            self.assertEqual(env["LC_ALL"], "C.UTF-8")
            self.assertEqual(env["TZ"], "UTC")
            self.assertIn("PATH", env)
            self.assertEqual(env["CNI_IFNAME"], "eth0")
            self.assertEqual(env["CNI_CONTAINERID"], "ctr-sec-env")
        self.assertNothingLeft()

    def test_delegate_env_widens_the_allow_list_by_name_and_prefix(self):
        runtime = {"NO_PROXY": "10.0.0.0/8", "CORP_REGION": "eu-1", "CORP_ZONE": "b",
                   "KUBECONFIG": "/etc/kubernetes/admin.conf", "CORPX": "withheld"}
        for env in self.delegate_environments("ctr-sec-env2", runtime, delegateEnv=["NO_PROXY", "CORP_*"]):
            self.assertEqual((env.get("NO_PROXY"), env.get("CORP_REGION"), env.get("CORP_ZONE")),
                             ("10.0.0.0/8", "eu-1", "b"))
            self.assertNotIn("KUBECONFIG", env)
            self.assertNotIn("CORPX", env)
        self.assertNothingLeft()


def listen_on(netns_path, address, port):
    """A TCP socket listening on address:port inside the namespace (only this thread switches)."""
    with open("/proc/thread-self/ns/net", "rb") as own, open(netns_path, "rb") as target:
        _setns(target.fileno())
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
            sock.listen(16)
        finally:
            _setns(own.fileno())
    return sock


class OtherAddressForwarder(NetnsForwarder):
    """A NetnsForwarder listening on another loopback address of the node namespace (one that
    the double's certificate does not name)."""

    def __init__(self, netns_path, address, port):  # pylint: disable=super-init-not-called
        self.port = port
        self._listener = listen_on(netns_path, address, port)
        self._lock = threading.Lock()
        self._sockets = set()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()


class K8sSecurityTest(K8sTestCase):
    """Rules about credentials, NADs and annotations."""

    def outputs(self, *runs):
        """Everything manifold said: each run's stdout and stderr, the debug log, the stored
        network-status annotation (and the whole stored pod)."""
        texts = [r.stdout + "\n" + r.stderr for r in runs]
        texts.append(self.tree.log_tail(1 << 30))
        texts.append(json.dumps(self.stored_pod()))
        return "\n".join(texts)

    def full_cycle_with_failures(self):
        """ADD, CHECK, DEL, an ADD that fails on a missing NAD, an ADD refused with 401."""
        runs = []
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        self.write_k8s(logLevel="debug")
        runs.append(self.add())
        self.assertOk(runs[-1])
        self.assertIsNotNone(self.status_annotation())
        runs.append(self.check())
        runs.append(self.delete())
        self.assertOk(runs[-1])
        self.api.modify_pod("default", self.pod_name, annotations={NETWORKS: "mac-a, absent"})
        runs.append(self.add())
        self.assertCniError(runs[-1], 104)
        self.api.modify_pod("default", self.pod_name, annotations={NETWORKS: "mac-a"})
        return runs

    def test_no_token_reaches_logs_errors_outputs_or_status(self):
        token = "mf-sekret-" + secrets.token_hex(16)
        self.api.set_tokens([token])
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="token",
                                                    token=token)
        runs = self.full_cycle_with_failures()
        self.api.set_tokens(["mf-other-" + secrets.token_hex(8)])  # our token is now refused
        runs.append(self.add())
        self.assertCniError(runs[-1], ERR_KUBERNETES)
        self.assertErrorMentions(runs[-1], "401")
        self.assertEqual({e["auth"] for e in self.requests()}, {"token"})
        text = self.outputs(*runs)
        self.assertIn("GET", self.tree.log_tail(1 << 30).upper(), "the debug log logs requests")
        self.assertNotIn(token, text)
        self.assertNotIn(token[10:], text, "a part of the token leaked")
        self.assertNotIn(base64.b64encode(token.encode()).decode(), text)
        self.assertNothingLeft()

    def test_no_token_in_the_errors_of_a_broken_kubeconfig(self):
        token = "mf-sekret-" + secrets.token_hex(16)
        self.add_pod({})
        good = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="token", token=token)
        with open(good, encoding="utf-8") as f:
            text = f.read()
        quoted = '"%s"' % token
        self.assertIn(quoted, text)
        broken = {
            "token as a list": text.replace(quoted, "[%s]" % quoted),
            "token as a map": text.replace(quoted, "{value: %s}" % quoted),
            "bad YAML after the token": text.replace(quoted, quoted + "\n  : : [unclosed"),
            "token with a NUL": text.replace(quoted, '"%s\\0x"' % token),
        }
        runs = []
        for what, content in broken.items():
            with self.subTest(what=what):
                with open(self.kubeconfig, "w", encoding="utf-8") as f:
                    f.write(content)
                self.write_k8s()
                runs.append(self.add())
                self.assertNotEqual(runs[-1].rc, 0, runs[-1].describe())
                self.assertNothingLeft()
        outputs = self.outputs(*runs)
        self.assertNotIn(token, outputs)
        self.assertNotIn(token[10:], outputs)

    def test_no_client_key_reaches_logs_errors_outputs_or_status(self):
        with open(self.api.client_key, encoding="utf-8") as f:
            key_pem = f.read()
        body = [line for line in key_pem.splitlines() if line and not line.startswith("-----")]
        key_data = base64.b64encode(key_pem.encode()).decode()
        for form in ("file", "data"):
            with self.subTest(form=form):
                self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"),
                                                            auth="cert", cert_form=form, ca="data")
                runs = self.full_cycle_with_failures()
                self.assertEqual({e["auth"] for e in self.requests()}, {"cert"})
                text = self.outputs(*runs)
                for line in body:
                    self.assertNotIn(line, text, "a line of the client key leaked")
                self.assertNotIn(key_data[:40], text, "the key-data leaked")
                self.assertNothingLeft()
                os.unlink(self.tree.log_file)

    def test_isolation_holds_for_the_json_form_and_the_default_network(self):
        self.api.add_nad("team-b", "secret", self.macvlan_nad_conf("198.51.100.51/24"))
        self.api.add_nad("team-a", "own", self.macvlan_nad_conf("198.51.100.50/24"))
        for annotations in ({NETWORKS: json.dumps([{"name": "secret", "namespace": "team-b"}])},
                            {NETWORKS: json.dumps([{"name": "own"},
                                                   {"name": "team-b/secret"}])},
                            {NETWORKS: "own, team-b/secret@net5"},
                            {DEFAULT_NETWORK: "team-b/secret"}):
            with self.subTest(annotations=annotations):
                self.add_pod(annotations, ns="team-a")
                self.write_k8s(namespaceIsolation=True)
                self.api.clear_requests()
                add = self.add(ns="team-a")
                self.assertCniError(add, ERR_INVALID_CONFIG)
                self.assertErrorMentions(add, "team-b")
                gets = [p for m, p in api_paths(self.requests()) if m == "GET"]
                self.assertEqual([p for p in gets if "/team-b/" in p], [],
                                 "a NAD of another namespace was read")
                self.assertEqual(gets[0], pod_path("team-a", self.pod_name))
                self.assertNothingLeft()

    def test_nad_type_that_is_a_path_runs_nothing(self):
        evil = EvilScripts(self)
        for bad_type in evil.types():
            for as_list in (False, True):
                with self.subTest(type=bad_type, conflist=as_list):
                    conf = self.macvlan_nad_conf()
                    if as_list:
                        conf = {"cniVersion": "1.0.0", "name": "evil-list",
                                "plugins": [self.macvlan_nad_conf(), {"type": bad_type}]}
                    else:
                        conf["type"] = bad_type
                    self.api.add_nad("default", "evil", conf)
                    self.add_pod({NETWORKS: "evil"})
                    self.write_k8s()
                    add = self.add()
                    self.assertCniError(add, ERR_INVALID_CONFIG)
                    self.assertFalse(evil.ran(), "a script outside binDir/CNI_PATH ran")
                    self.assertNothingLeft()

    def test_ten_thousand_networks_are_rejected_with_a_bound(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        for annotation in (",".join(["mac-a"] * 10000),
                           json.dumps([{"name": "mac-a"}] * 10000)):
            with self.subTest(form=annotation[:1]):
                self.add_pod({NETWORKS: annotation})
                self.write_k8s()
                self.api.clear_requests()
                add = self.add()
                self.assertNotEqual(add.rc, 0)
                self.assertCniError(add, ERR_INVALID_CONFIG)
                self.assertErrorMentions(add, "1000")
                self.assertEqual([p for m, p in api_paths(self.requests()) if "network-attach" in p],
                                 [], "no NAD may be read for a rejected annotation")
                self.assertNothingLeft()

    def test_interface_name_of_16_characters_in_an_annotation_is_rejected(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        for annotation in ("mac-a@abcdefghijklmnop",
                           json.dumps([{"name": "mac-a", "interface": "0123456789abcdef"}])):
            with self.subTest(annotation=annotation):
                self.add_pod({NETWORKS: annotation})
                self.write_k8s()
                add = self.add()
                self.assertNotEqual(add.rc, 0)
                self.assertCniError(add, ERR_INVALID_CONFIG)
                self.assertNothingLeft()

    def test_certificate_for_another_host_is_an_error(self):
        # 127.0.0.2 reaches the double through a forwarder, but its certificate names 127.0.0.1,
        # ::1 and localhost only.
        forwarder = OtherAddressForwarder(self.node.path, "127.0.0.2", self.api.port)
        self.addCleanup(forwarder.stop)
        self.kubeconfig = self.api.write_kubeconfig(
            self.tree.path("kubeconfig"), auth="token",
            server="https://127.0.0.2:%d" % self.api.port)
        self.add_pod({})
        self.write_k8s()
        self.api.clear_requests()
        add = self.add()
        self.assertCniError(add, ERR_KUBERNETES)
        self.assertErrorMentions(add, "certificate")
        self.assertEqual(self.requests(), [], "no request may be sent to an unverified server")
        self.assertNothingLeft()

    def test_insecure_skip_tls_verify_is_logged_as_a_warning(self):
        self.api.write_kubeconfig(self.kubeconfig, auth="token", insecure=True)
        self.add_pod({})
        self.write_k8s()
        self.assertOk(self.add())
        warnings = [line for line in self.tree.log_tail(1 << 20).splitlines()
                    if re.search(r"\[verbose\] .*warning: kubeconfig .*insecure-skip-tls-verify: "
                                 r"the API server's certificate will NOT be verified", line)]
        self.assertEqual(len(warnings), 1, self.tree.log_tail())
        self.assertOk(self.delete())
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
