#!/usr/bin/env python3
"""How manifold talks to the Kubernetes API, end to end through libcni against the API server
double: the exact request sequence of an ADD (2 + distinct NADs, one kept-alive connection, no
PATCH, events pipelined behind the status PUT) in three round trips (the pod; every NAD at once; the
status with the events), the status PUT's 409 re-GET and retry, a bounded 429 storm, the
credentials (token, tokenFile re-read after rotation, client certificate; YAML and JSON
kubeconfigs), the pod's identity (missing pod, UID mismatch, static pods), and DEL without the API:
from the cache with the pod deleted or the API down, and from the pod and its NADs when the cache
is gone.
"""
import json
import os
import shutil
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from harness.tree import TLS_SESSION_DIR  # noqa: E402
from k8s_case import (NETWORK_STATUS, NETWORKS, STATUS_PUT, K8sTestCase, api_paths,  # noqa: E402
                      nad_path, pod_path)

SMALL_TIMEOUTS = {"request": 1000, "call": 2500, "total": 6000, "attempts": 20}


class K8sApiTest(K8sTestCase):
    """Requests, credentials, retries and DEL without the API."""

    def add_standard_pod(self, **pod_kw):
        """A pod on the cluster network plus a host-local NAD listed twice and a static one."""
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf("198.51.100.10/24"))
        self.add_pod({NETWORKS: "pool, mac-a, pool"}, **pod_kw)

    # ---- the request sequence -----------------------------------------------------------------

    def test_add_makes_two_plus_k_requests_on_one_connection(self):
        self.add_standard_pod()
        self.write_k8s()
        self.assertOk(self.add())
        log = self.requests()
        own = pod_path("default", self.pod_name)
        self.assertEqual(api_paths(log), [
            ("GET", own),
            ("GET", nad_path("default", "pool")),
            ("GET", nad_path("default", "mac-a")),
            ("PUT", own + "/status")])
        self.assertEqual([e["status"] for e in log[:4]], [200, 200, 200, 200])
        events = [e for e in log if e["path"].endswith("/events")]
        self.assertEqual([(e["method"], e["path"]) for e in events],
                         [("POST", "/api/v1/namespaces/default/events")] * 4)
        self.assertEqual([e["status"] for e in events], [201] * 4)
        self.assertEqual(len({e["conn"] for e in log}), 1, "one kept-alive connection per ADD")
        # Three round trips: the pod; both NADs in one (the second pipelined behind the first);
        # the status PUT with the four events pipelined behind it.
        self.assertEqual([e["pipelined"] for e in log],
                         [False, False, True, False, True, True, True, True])
        self.assertNoPatch()
        for entry in log:
            self.assertEqual(entry["auth"], "token")
            self.assertEqual(entry["user"], self.api.user)
        messages = sorted(ev["message"] for ev in self.api.events())
        self.assertEqual(len(messages), 4)
        self.assertTrue(messages[0].startswith("Add eth0 [192.0.2."), messages)
        self.assertTrue(messages[0].endswith("] from cluster"), messages)
        self.assertIn("Add net2 [198.51.100.10/24] from default/mac-a", messages)
        for ev in self.api.events():
            self.assertEqual(ev["reason"], "AddedInterface")
            self.assertEqual(ev["involvedObject"]["uid"], self.pod_uid)
        self.api.clear_requests()
        self.assertOk(self.delete())
        self.assertEqual(self.requests(), [])
        self.assertNothingLeft()

    def test_the_next_invocation_resumes_the_tls_session(self):
        self.add_standard_pod()
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual({e["tls_resumed"] for e in self.requests()}, {False}, "first call: full handshake")
        sessions = self.tree.tls_session_files()
        self.assertEqual(len(sessions), 1, sessions)
        st = os.stat(os.path.join(self.tree.cni_dir, sessions[0]))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertOk(self.delete())
        self.api.clear_requests()
        self.assertOk(self.add())
        log = self.requests()
        self.assertEqual(len(api_paths(log)), 4)
        self.assertEqual({e["tls_resumed"] for e in log}, {True}, "the second ADD resumed the stored session")
        self.assertEqual({e["user"] for e in log}, {self.api.user})
        self.assertEqual(self.tree.tls_session_files(), sessions, "a resumed session is not stored again")
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_storing_a_session_sweeps_what_a_killed_session_write_left(self):
        """A manifold killed inside the session write leaves its temp file in .tls; the next one
        that stores a session removes it once it is old (a young one may be a write in progress)."""
        self.add_standard_pod()
        self.write_k8s()
        tls = os.path.join(self.tree.cni_dir, TLS_SESSION_DIR)
        os.makedirs(tls, mode=0o700, exist_ok=True)
        stale, young = os.path.join(tls, ".session.tmp-Ab12Cd"), os.path.join(tls, ".session.tmp-Xy34Zw")
        for path in (stale, young):
            with open(path, "w") as f:
                f.write("manifold-tls-session 1\n")
        an_hour_ago = time.time() - 3600
        os.utime(stale, (an_hour_ago, an_hour_ago))
        self.assertOk(self.add())
        self.assertEqual({e["tls_resumed"] for e in self.requests()}, {False}, "a full handshake stores a session")
        self.assertFalse(os.path.exists(stale), "the leftover of a killed write is swept")
        self.assertTrue(os.path.exists(young), "a temp file younger than ten minutes is left alone")
        self.assertEqual(self.tree.tls_session_files(), [TLS_SESSION_DIR + "/.session.tmp-Xy34Zw",
                                                         TLS_SESSION_DIR + "/session"])
        os.unlink(young)
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_the_nodes_openssl_configuration_is_never_read(self):
        # Its providers, engines and policy belong to the node's own OpenSSL, not to the one linked
        # into manifold; nor may TLS session resumption read it by touching OpenSSL early.
        self.add_standard_pod()
        self.write_k8s()
        marker = self.tree.path("node-openssl.cnf")
        with open(marker, "w", encoding="utf-8") as f:
            f.write("openssl_conf = openssl_init\n")
        trace = self.tree.path("openat.trace")
        for _ in range(2):  # a full handshake, then a resumed one
            # LeakSanitizer cannot run under ptrace: in the ASan build only leak checking is off here.
            asan = os.environ.get("ASAN_OPTIONS", "")
            env = {"OPENSSL_CONF": marker, "ASAN_OPTIONS": (asan + ":" if asan else "") + "detect_leaks=0"}
            self.assertOk(self.add(extra_env=env,
                                   wrapper=["strace", "-f", "-qq", "-e", "trace=openat,open", "-o", trace]))
            with open(trace, encoding="utf-8") as f:
                opened = f.read()
            self.assertIn(self.tree.cni_dir, opened, "the trace covers manifold")
            self.assertEqual([line for line in opened.splitlines() if marker in line or "openssl.cnf" in line], [])
            self.assertOk(self.delete())
        self.assertEqual({e["tls_resumed"] for e in self.requests() if e["method"] == "PUT"}, {False, True})
        self.assertNothingLeft()

    def test_put_reuses_the_resource_version_of_the_get(self):
        self.add_pod({})
        rv = self.stored_pod()["metadata"]["resourceVersion"]
        self.write_k8s()
        self.assertOk(self.add())
        put = self.requests(method="PUT")
        self.assertEqual(len(put), 1)
        body = json.loads(put[0]["body"])
        self.assertEqual(body["metadata"]["resourceVersion"], rv)
        self.assertEqual(body["metadata"]["uid"], self.pod_uid)
        self.assertEqual(body["metadata"]["annotations"][NETWORK_STATUS], self.status_annotation())
        self.assertNotEqual(self.stored_pod()["metadata"]["resourceVersion"], rv)
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_conflict_on_the_status_put_rereads_the_pod_and_retries(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        self.write_k8s()
        self.api.conflict_next(1)
        self.assertOk(self.add())
        own = pod_path("default", self.pod_name)
        log = [e for e in self.requests() if not e["path"].endswith("/events")]
        self.assertEqual([(e["method"], e["path"], e["status"]) for e in log], [
            ("GET", own, 200),
            ("GET", nad_path("default", "mac-a"), 200),
            ("PUT", own + "/status", 409),
            ("GET", own, 200),
            ("PUT", own + "/status", 200)])
        first, second = json.loads(log[2]["body"]), json.loads(log[4]["body"])
        self.assertNotEqual(first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"])
        self.assertEqual(first["metadata"]["annotations"][NETWORK_STATUS],
                         second["metadata"]["annotations"][NETWORK_STATUS])
        pod = self.stored_pod()
        self.assertIn(NETWORK_STATUS, pod["metadata"]["annotations"])
        self.assertNoPatch()
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_conflicts_that_never_end_fail_the_add_and_roll_back(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.conflict_next(100)
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "network status", self.pod_name, "5 conflicting updates")
        self.assertNothingLeft()
        self.assertEqual(len(self.requests(method="PUT")), 5)

    def test_a_429_storm_on_the_pod_ends_in_a_bounded_clear_error(self):
        self.add_pod({})
        self.write_k8s(apiTimeouts=SMALL_TIMEOUTS)
        self.api.add_fault(path=r"/pods/", action="status", status=429, retry_after=1, count=None)
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "429", "TooManyRequests", self.pod_name)
        self.assertNothingLeft()
        self.assertLessEqual(len(self.requests()), SMALL_TIMEOUTS["attempts"])
        self.assertGreaterEqual(len(self.requests()), 2, "a 429 is retried")

    def test_a_429_storm_on_the_status_put_rolls_the_add_back(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s(apiTimeouts=SMALL_TIMEOUTS)
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="status", status=429,
                           retry_after=1, count=None)
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "429", "network status")
        self.assertNothingLeft()
        self.assertGreaterEqual(len(self.requests(method="PUT")), 2)

    def test_a_short_429_burst_is_absorbed(self):
        self.add_pod({})
        self.write_k8s()
        self.api.add_fault(path=r"/pods/", method="GET", action="status", status=429,
                           retry_after=0, count=2)
        self.api.add_fault(path=r"/pods/", method="GET", action="status", status=503, count=1)
        self.assertOk(self.add())
        self.assertEqual([(e["method"], e["status"]) for e in self.requests()
                          if not e["path"].endswith("/events")],
                         [("GET", 429), ("GET", 429), ("GET", 503), ("GET", 200), ("PUT", 200)])
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_slow_delegates_do_not_count_against_the_api_time_bound(self):
        slow = os.path.join(self.tree.bin_dir, "slow-bridge")
        with open(slow, "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\nsleep 2\nexec /usr/lib/cni/bridge "$@"\n')
        os.chmod(slow, 0o755)
        conf = self.cluster_conf()
        conf["type"] = "slow-bridge"
        self.add_pod({})
        self.write_k8s(delegates=[conf],
                       apiTimeouts={"request": 1000, "call": 1000, "total": 1500, "attempts": 2})
        add = self.add()
        self.assertOk(add)
        self.assertGreater(add.elapsed, 2)
        self.assertIsNotNone(self.status_annotation())
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_events_never_fail_the_add(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        self.write_k8s()
        self.api.deny(verb="create", resource="events")
        self.assertOk(self.add())
        # One per attachment, each sent once, behind the PUT.
        self.assertEqual([e["status"] for e in self.requests(path="/events$")], [403, 403])
        self.assertIsNotNone(self.status_annotation())
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_a_failing_events_endpoint_does_not_delay_the_add(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        self.write_k8s()
        self.api.add_fault(path="/events$", action="status", status=503, retry_after=1, count=None)
        add = self.add()
        self.assertOk(add)
        events = self.requests(path="/events$")
        self.assertEqual(len(events), 2, "each event is sent once, never again after its 503")
        self.assertTrue(all(e["pipelined"] for e in events), "the events ride in the status PUT's round trip")
        self.assertLess(add.elapsed, 5)
        self.assertOk(self.delete())
        self.assertNothingLeft()

    # ---- credentials --------------------------------------------------------------------------

    def test_token_file_auth_and_rotation_between_calls(self):
        token_file = self.tree.path("sa-token")
        self.api.write_token_file(token_file)
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="tokenFile",
                                                    token_file=token_file)
        self.add_pod({})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual({e["auth"] for e in self.requests()}, {"token"})
        self.assertOk(self.delete())
        # The service-account token rotates: the old one is refused from now on.
        self.api.set_tokens(["rotated-token-2"])
        self.api.write_token_file(token_file, "rotated-token-2")
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertEqual({e["status"] for e in self.requests()} - {201}, {200})
        self.assertOk(self.delete())
        # A token file that was not updated gets a clear 401 and leaves nothing behind.
        self.api.set_tokens(["rotated-token-3"])
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "401", "Unauthorized")
        self.assertNotIn("rotated-token", add.stderr + add.stdout + self.tree.log_tail(10 ** 6))
        self.assertNothingLeft()

    def test_a_token_bound_to_the_agents_deleted_pod(self):
        # The DaemonSet's agent installs its pod's projected token, which the API server refuses
        # once that pod is gone: a pod added before is still deleted cleanly (from the cache), a
        # new ADD is refused with a clear 401 and leaves nothing.
        self.api.add_pod("kube-system", "manifold-agent", uid="uid-manifold-agent")
        self.api.set_tokens({"agent-pod-token": {"user": self.api.user, "boundPod": {
            "namespace": "kube-system", "name": "manifold-agent", "uid": "uid-manifold-agent"}}})
        token_file = self.api.write_token_file(self.tree.path("sa-token"), "agent-pod-token")
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="tokenFile",
                                                    token_file=token_file)
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(sorted(self.pod.link_names()), ["eth0", "lo", "net1"])
        self.api.delete_pod("kube-system", "manifold-agent")
        self.api.clear_requests()
        self.assertOk(self.delete())
        self.assertEqual(self.requests(), [], "DEL works from the cache, without the API server")
        self.assertNothingLeft()
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "401", "Unauthorized")
        self.assertNothingLeft()

    def test_client_certificate_auth(self):
        for form in ("file", "data"):
            self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="cert",
                                                        cert_form=form, ca="data")
            self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
            self.add_pod({NETWORKS: "mac-a"})
            self.write_k8s()
            self.api.clear_requests()
            self.assertOk(self.add(), form)
            log = self.requests()
            self.assertEqual({e["auth"] for e in log}, {"cert"}, form)
            self.assertEqual({e["user"] for e in log}, {self.api.user}, form)
            # The same certificate and key bytes, read from files or from the kubeconfig: the second
            # call resumes the first one's session, still authenticated by the certificate.
            self.assertEqual({e["tls_resumed"] for e in log}, {form == "data"}, form)
            self.assertEqual(len(api_paths(log)), 3)
            self.assertOk(self.delete())
            self.assertNothingLeft()

    def test_kubeconfig_token_auth_with_a_decoy_context(self):
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="token",
                                                    decoy=True)
        self.add_pod({})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(len(api_paths(self.requests())), 2)
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_json_kubeconfig_as_manifold_install_writes_it(self):
        # JSON is YAML's subset; manifold reads it with its JSON parser. Every credential form, with
        # a decoy context first, must work exactly as from YAML.
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "mac-a"})
        for variant in ({"auth": "tokenFile", "decoy": True}, {"auth": "cert", "ca": "data", "cert_form": "data"},
                        {"auth": "token", "namespace": "kube-system"}):
            self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig.json"), fmt="json", **variant)
            self.write_k8s()
            self.api.clear_requests()
            self.assertOk(self.add(), variant)
            log = self.requests()
            self.assertEqual({e["auth"] for e in log}, {"cert" if variant["auth"] == "cert" else "token"}, variant)
            self.assertEqual(len(api_paths(log)), 3, variant)
            self.assertOk(self.delete(), variant)
            self.assertNothingLeft()

    def test_an_untrusted_server_certificate_is_a_clear_error(self):
        self.api.write_kubeconfig(self.kubeconfig, auth="token")
        with open(self.kubeconfig, encoding="utf-8") as f:
            text = f.read()
        with open(self.kubeconfig, "w", encoding="utf-8") as f:
            f.write(text.replace(self.api.ca_file, self.api.wrong_ca_file))
        self.add_pod({})
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "certificate", "rejected")
        self.assertEqual(self.requests(), [], "no request may be sent to an unverified server")
        self.assertNothingLeft()

    def test_insecure_skip_tls_verify_works_and_warns(self):
        self.api.write_kubeconfig(self.kubeconfig, auth="token", insecure=True)
        self.add_pod({})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertIn("insecure", self.tree.log_tail(1 << 20).lower())
        self.assertOk(self.delete())
        self.assertNothingLeft()

    # ---- the pod's identity -------------------------------------------------------------------

    def test_pod_missing_at_add_is_an_error_naming_it(self):
        self.api.delete_pod("default", self.pod_name)
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "default/" + self.pod_name)
        self.assertEqual(api_paths(self.requests()), [("GET", pod_path("default", self.pod_name))])
        self.assertEqual(self.tree.reservations(), [])
        self.assertNothingLeft()

    def test_uid_mismatch_is_an_error_but_not_for_static_pods(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "pool"}, uid="uid-of-a-newer-pod")
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, self.pod_uid, "uid-of-a-newer-pod")
        self.assertEqual(api_paths(self.requests()), [("GET", pod_path("default", self.pod_name))])
        self.assertNothingLeft()
        # A static (mirror) pod carries another UID in the API: that is expected.
        self.add_pod({NETWORKS: "pool", "kubernetes.io/config.source": "file"},
                     uid="uid-of-the-mirror-pod")
        self.assertOk(self.add())
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1"])
        self.assertOk(self.delete())
        self.assertNothingLeft()

    # ---- DEL without the API ------------------------------------------------------------------

    def test_pod_deleted_before_del_still_releases_every_ip(self):
        self.add_standard_pod()
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(len(self.tree.reservations()), 3)
        self.api.delete_pod("default", self.pod_name)
        self.api.clear_requests()
        self.assertOk(self.delete())
        self.assertEqual(self.requests(), [], "DEL from the cache makes no request")
        self.assertNothingLeft()

    def test_api_down_during_del_still_succeeds_from_the_cache(self):
        self.add_standard_pod()
        self.write_k8s()
        self.assertOk(self.add())
        self.forwarder.stop()
        self.api.clear_requests()
        self.assertOk(self.delete())
        self.assertEqual(self.requests(), [])
        self.assertNothingLeft()

    def test_del_without_cache_rebuilds_from_the_pod_and_releases_every_ip(self):
        self.add_standard_pod()
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(len(self.tree.reservations()), 3)
        shutil.rmtree(self.tree.cni_dir)
        self.api.clear_requests()
        self.assertOk(self.delete())
        self.assertEqual(self.tree.reservations(), [], "host-local reservations leaked")
        self.assertEqual(api_paths(self.requests()), [
            ("GET", pod_path("default", self.pod_name)),
            ("GET", nad_path("default", "pool")),
            ("GET", nad_path("default", "mac-a"))])
        # Without a record nothing proves the links are ours: they go with the namespace.
        self.pod.delete()
        self.assertNothingLeft()

    def test_del_without_cache_skips_a_vanished_nad_and_releases_the_others(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.api.add_nad("default", "vanishing", self.macvlan_nad_conf())
        self.add_pod({NETWORKS: "pool, vanishing, pool"})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2", "net3"])
        self.assertEqual(len(self.tree.reservations()), 3)
        shutil.rmtree(self.tree.cni_dir)
        self.api.delete_nad("default", "vanishing")
        self.assertOk(self.delete())
        # pool keeps its names net1 and net3, so host-local finds both reservations.
        self.assertEqual(self.tree.reservations(), [], "host-local reservations leaked")
        self.pod.delete()
        self.assertNothingLeft()

    def test_del_without_cache_and_without_the_pod_still_succeeds(self):
        self.add_standard_pod()
        self.write_k8s()
        self.assertOk(self.add())
        shutil.rmtree(self.tree.cni_dir)
        self.api.delete_pod("default", self.pod_name)
        self.assertOk(self.delete())
        # The NADs can no longer be known; the cluster network's address is released.
        self.assertNotIn("192.0.2.2", " ".join(self.tree.reservations()))
        self.pod.delete()
        self.assertOk(self.delete())

    def test_del_without_cache_with_the_api_down_still_succeeds(self):
        self.add_standard_pod()
        self.write_k8s(apiTimeouts=SMALL_TIMEOUTS)
        self.assertOk(self.add())
        shutil.rmtree(self.tree.cni_dir)
        self.forwarder.stop()
        self.assertOk(self.delete())
        self.assertNotIn("192.0.2.2", " ".join(self.tree.reservations()))


if __name__ == "__main__":
    main()
