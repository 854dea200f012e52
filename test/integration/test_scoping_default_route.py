#!/usr/bin/env python3
"""Network scoping chosen per pod, through Kubernetes: the pod's k8s.v1.cni.cncf.io/networks
selection element carries `default-route` and `cni-args` (sourceRouting, mesh), the NAD carries the
network layer, and manifold talks to the Kubernetes API server double (test/integration/apiserver).

- default-route on IPv4 and IPv6: exactly one default route per family, on net1, through the
  selected gateway; eth0's are gone; the returned (cluster) result and the network-status
  `gateway` lists say so, `default` still marks the cluster network; CHECK passes;
- only the families asked for move;
- `"default-route": []` removes the default routes the NAD's own IPAM added too;
- an ADD rolled back after the default-route step (the status write failed for good) puts back
  the default routes of the interfaces that outlive it (one there before the ADD, one whose DEL
  failed and stays recorded) and removes the one it added; rolled back after `"default-route": []`,
  it gives such an interface back its IPv4 and its IPv6 default route; so does an ADD whose
  result cannot be rendered after the status write;
- the pod's cni-args win over the NAD's keys; a meshed attachment's status entry carries the
  manifold.io/mesh field with its ports;
- two elements asking for one family, and an interface name with a space or of 16 characters,
  are error 7 and create nothing.

manifold runs in the harness's node namespace, so the API server double runs there too: this test
process moves its own (main) thread into the node namespace while the double lives, and back.
"""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "apiserver"))
sys.dont_write_bytecode = True

from apiserver_double import ApiServerDouble  # noqa: E402
from harness import ci, main  # noqa: E402
from scoping_world import CLUSTER_GW, NET1_CIDR, NET1_GW, ScopingTestCase, cluster_conf, net1_conf  # noqa: E402

CONTAINER = "ctr-scoping-k8s"
POD_NS, POD_NAME, POD_UID = "default", "web", "5d1e7a1c-0000-4000-8000-00000000c0de"
STATUS = "k8s.v1.cni.cncf.io/network-status"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "setns: " + os.strerror(err))


class ThreadInNetns:
    """Moves the calling thread into a network namespace until exit (processes it starts follow)."""

    def __init__(self, path):
        self.path = path
        self.original = None

    def __enter__(self):
        self.original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        target = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(target)
        finally:
            os.close(target)
        return self

    def __exit__(self, *exc):
        try:
            _setns(self.original)
        finally:
            os.close(self.original)
        return False


class KubernetesScopingTest(ScopingTestCase):
    """default-route, cni-args and status through the API server double."""

    def setUp(self):
        super().setUp()
        self._in_node = ThreadInNetns(self.node.path)
        self._in_node.__enter__()
        self.addCleanup(self._in_node.__exit__, None, None, None)
        self.api = ApiServerDouble()
        self.api.start()
        self.addCleanup(self.api.stop)
        self.kubeconfig = self.api.write_kubeconfig(self.tree.path("kubeconfig"), auth="token")
        self.cni_args = "K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_UID=%s" % (POD_NS, POD_NAME, POD_UID)

    def setup_pod(self, elements, nad_keys=None):
        nad = net1_conf(self.v6)
        nad.update(nad_keys or {})
        self.api.add_nad(POD_NS, "data", nad)
        self.api.add_pod(POD_NS, POD_NAME, uid=POD_UID, annotations={NETWORKS: json.dumps(elements)})
        self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, self.v6)], kubeconfig=self.kubeconfig)

    def add(self):
        return self.driver("add", self.pod.path, container_id=CONTAINER, cni_args=self.cni_args)

    def verb(self, verb):
        return self.driver(verb, self.pod.path, container_id=CONTAINER, cni_args=self.cni_args)

    def status(self):
        pod = self.api.get_pod(POD_NS, POD_NAME)
        return json.loads(pod["metadata"]["annotations"][STATUS])

    def defaults(self, family):
        """(gateway, dev) of every main-table default route of the pod."""
        return [(r.get("gateway"), r.get("dev")) for r in self.pod.default_routes(family)]

    def result_defaults(self, result):
        """The default-route destinations of a result (the bridge plugin's carry no gateway)."""
        return sorted(r["dst"] for r in result.get("routes") or [] if r["dst"] in ("0.0.0.0/0", "::/0"))

    def test_default_route_ipv4_and_ipv6_moves_to_net1_and_shows_in_result_and_status(self):
        gateways = [NET1_GW[4]] + ([NET1_GW[6]] if self.v6 else [])
        self.setup_pod([{"name": "data", "interface": "net1", "default-route": gateways,
                         "cni-args": {"sourceRouting": {"enabled": True},
                                      "mesh": {"enabled": True, "iptablesMode": "nft", "inboundPort": 4143}}}],
                       nad_keys={"mesh": {"enabled": False, "inboundPort": 1111}})
        add = self.add()
        self.assertOk(add)
        self.assertEqual(self.defaults(4), [(NET1_GW[4], "net1")])
        if self.v6:
            self.assertEqual(self.defaults(6), [(NET1_GW[6], "net1")])
        # The returned result is the cluster network's: its default routes are gone.
        self.assertEqual(self.result_defaults(add.result), [])
        entries = {e["name"]: e for e in self.status()}
        cluster = entries["cluster"]
        data = entries["%s/data" % POD_NS]
        self.assertTrue(cluster.get("default"))
        self.assertNotIn("gateway", cluster)
        self.assertFalse(data.get("default", False))
        self.assertEqual(data["gateway"], gateways)
        self.assertEqual(data["manifold.io/mesh"], {"inboundPort": 4143, "outboundPort": 4140})
        save = self.nat_save("nft", 4)
        self.assertIn("--to-ports 4143", save)
        self.assertNotIn("1111", save)
        self.assertEqual(len(self.our_rules()), len(gateways))
        self.assertOk(self.verb("check"))
        self.assertOk(self.verb("del"))
        self.assertEqual(self.our_rules(), [])
        self.assertNotIn("CNIMESH", self.nat_save("nft", 4))
        self.assertNothingLeft()

    def test_only_the_requested_family_moves(self):
        if not self.v6:
            ci.skip_or_fail(self, "the kernel has no IPv6", feature="ipv6")
        self.setup_pod([{"name": "data", "interface": "net1", "default-route": [NET1_GW[6]]}])
        add = self.add()
        self.assertOk(add)
        self.assertEqual(self.defaults(4), [(CLUSTER_GW[4], "eth0")])
        self.assertEqual(self.defaults(6), [(NET1_GW[6], "net1")])
        self.assertEqual(self.result_defaults(add.result), ["0.0.0.0/0"])
        entries = {e["name"]: e for e in self.status()}
        self.assertNotIn(CLUSTER_GW[6], entries["cluster"].get("gateway", []))
        self.assertEqual(entries["%s/data" % POD_NS]["gateway"], [NET1_GW[6]])
        self.assertNotIn("manifold.io/mesh", entries["%s/data" % POD_NS])
        self.assertOk(self.verb("check"))
        # CHECK notices a default route that came back on eth0.
        self.pod.ip("-6", "route", "add", "default", "via", CLUSTER_GW[6], "dev", "eth0", "metric", "5")
        self.assertCniError(self.verb("check"), 107)
        self.assertOk(self.verb("del"))
        self.assertNothingLeft()

    def test_an_empty_default_route_removes_the_default_routes_of_the_nads_ipam(self):
        nad = net1_conf(self.v6)
        nad["ipam"]["routes"] += [{"dst": "0.0.0.0/0", "gw": NET1_GW[4]}] + (
            [{"dst": "::/0", "gw": NET1_GW[6]}] if self.v6 else [])
        self.api.add_nad(POD_NS, "data", nad)
        self.api.add_pod(POD_NS, POD_NAME, uid=POD_UID,
                         annotations={NETWORKS: json.dumps([{"name": "data", "default-route": []}])})
        self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, self.v6)], kubeconfig=self.kubeconfig)
        add = self.add()
        self.assertOk(add)
        self.assertEqual(self.defaults(4), [])
        self.assertEqual(self.defaults(6), [])
        self.assertEqual(self.result_defaults(add.result), [])
        self.assertEqual([e.get("gateway") for e in self.status()], [None, None])
        self.assertOk(self.verb("check"))
        self.assertOk(self.verb("del"))
        self.assertNothingLeft()

    def test_a_rollback_restores_the_default_routes_of_interfaces_that_outlive_it(self):
        # pre0 was in the pod before the ADD, with a default route of its own; net1's delegate
        # fails its DEL, so net1 stays (recorded) after the rollback.
        self.pod.ip("link", "add", "pre0", "type", "veth", "peer", "name", "pre1")
        self.pod.ip("addr", "add", "203.0.113.2/24", "dev", "pre0")
        self.pod.ip("link", "set", "pre0", "up")
        self.pod.ip("link", "set", "pre1", "up")
        self.pod.ip("route", "add", "default", "via", "203.0.113.1", "dev", "pre0", "metric", "50")
        fail_flag = self.tree.path("net1-del-fails")
        open(fail_flag, "w").close()
        self.api.add_nad(POD_NS, "data", self.fake_conf("fake-record", name="data", address=NET1_CIDR[4],
                                                        failOn=["DEL"], failWhile=fail_flag))
        self.api.add_pod(POD_NS, POD_NAME, uid=POD_UID, annotations={NETWORKS: json.dumps(
            [{"name": "data", "interface": "net1", "default-route": [NET1_GW[4]]}])})
        self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, False)], kubeconfig=self.kubeconfig)
        self.api.add_fault(path=r"/pods/%s/status$" % POD_NAME, action="status", method="PUT", status=403)
        add = self.add()
        self.assertCniError(add, 103)
        self.assertIsNotNone(self.pod.link("net1"), "net1's DEL failed: it must still be there")
        self.assertIsNone(self.pod.link("eth0"))
        # The default-route step had removed pre0's default route and added one via net1: the
        # rollback put the first back and took the second away.
        self.assertEqual(self.defaults(4), [("203.0.113.1", "pre0")])
        self.assertEqual([r["command"] for r in self.tree.records()], ["ADD", "DEL"])
        self.api.clear_faults()
        os.unlink(fail_flag)
        self.assertOk(self.verb("del"))
        self.pod.ip("link", "del", "pre0")
        self.assertNothingLeft()

    def test_a_result_that_fails_after_the_default_route_step_rolls_it_back(self):
        # The status write succeeds; then the result cannot be rendered in the runtime's version
        # (0.2.0 needs an IP address, the cluster delegate reported none): the rollback must give
        # pre0, which was in the pod before the ADD, its default route back.
        self.pod.ip("link", "add", "pre0", "type", "veth", "peer", "name", "pre1")
        self.pod.ip("addr", "add", "203.0.113.2/24", "dev", "pre0")
        for link in ("pre0", "pre1"):
            self.pod.ip("link", "set", link, "up")
        self.pod.ip("route", "add", "default", "via", "203.0.113.1", "dev", "pre0", "metric", "50")
        self.api.add_nad(POD_NS, "data", net1_conf(False))
        self.api.add_pod(POD_NS, POD_NAME, uid=POD_UID, annotations={NETWORKS: json.dumps(
            [{"name": "data", "interface": "net1", "default-route": [NET1_GW[4]]}])})
        self.write_manifold("0.2.0", [self.fake_conf("fake-record", name="cluster")],
                            kubeconfig=self.kubeconfig)
        add = self.add()
        self.assertCniError(add, 1)
        self.assertIn("no IP address", add.stdout + add.stderr)
        self.assertIsNotNone(self.api.get_pod(POD_NS, POD_NAME)["metadata"]["annotations"].get(STATUS),
                             "the status write came before the result")
        self.assertEqual(self.pod.link_names(), ["lo", "pre0", "pre1"])
        self.assertEqual(self.defaults(4), [("203.0.113.1", "pre0")])
        self.assertEqual([r["command"] for r in self.tree.records()], ["ADD", "DEL"])
        self.assertOk(self.verb("del"))
        self.pod.ip("link", "del", "pre0")
        self.assertNothingLeft()

    def test_a_rolled_back_empty_default_route_gives_back_both_families(self):
        if not self.v6:
            ci.skip_or_fail(self, "the kernel has no IPv6", feature="ipv6")
        # pre0 was in the pod before the ADD with an IPv4 and an IPv6 default route; the
        # default-route step of `"default-route": []` removed both (with eth0's and net1's),
        # then the status write failed for good: the rollback must give pre0 both back.
        self.pod.ip("link", "add", "pre0", "type", "veth", "peer", "name", "pre1")
        self.pod.ip("addr", "add", "203.0.113.2/24", "dev", "pre0")
        self.pod.ip("addr", "add", "2001:db8:99::2/64", "dev", "pre0", "nodad")
        for link in ("pre0", "pre1"):
            self.pod.ip("link", "set", link, "up")
        self.pod.ip("route", "add", "default", "via", "203.0.113.1", "dev", "pre0", "metric", "50")
        self.pod.ip("-6", "route", "add", "default", "via", "2001:db8:99::1", "dev", "pre0", "metric", "50")
        nad = net1_conf(True)
        nad["ipam"]["routes"] += [{"dst": "0.0.0.0/0", "gw": NET1_GW[4]}, {"dst": "::/0", "gw": NET1_GW[6]}]
        self.api.add_nad(POD_NS, "data", nad)
        self.api.add_pod(POD_NS, POD_NAME, uid=POD_UID, annotations={NETWORKS: json.dumps(
            [{"name": "data", "interface": "net1", "default-route": []}])})
        self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, True)], kubeconfig=self.kubeconfig)
        self.api.add_fault(path=r"/pods/%s/status$" % POD_NAME, action="status", method="PUT", status=403)
        self.assertCniError(self.add(), 103)
        self.assertEqual(self.pod.link_names(), ["lo", "pre0", "pre1"])
        self.assertEqual(self.defaults(4), [("203.0.113.1", "pre0")])
        self.assertEqual(self.defaults(6), [("2001:db8:99::1", "pre0")])
        self.api.clear_faults()
        self.assertOk(self.verb("del"))
        self.pod.ip("link", "del", "pre0")
        self.assertNothingLeft()

    def test_conflicting_or_invalid_selections_are_error_7_and_create_nothing(self):
        cases = [
            ("two networks for one family",
             [{"name": "data", "interface": "net1", "default-route": [NET1_GW[4]]},
              {"name": "data", "interface": "net2", "default-route": ["198.51.100.2"]}], "default-route"),
            ("two gateways of one family", [{"name": "data", "interface": "net1",
                                             "default-route": [NET1_GW[4], "198.51.100.2"]}], "default-route"),
            ("a gateway that is no address", [{"name": "data", "interface": "net1",
                                               "default-route": ["gateway"]}], "gateway"),
            ("an interface name with a space", [{"name": "data", "interface": "net 1"}], "net 1"),
            ("an interface name of 16 characters", [{"name": "data", "interface": "abcdefghijklmnop"}],
             "abcdefghijklmnop"),
            ("a bad port in cni-args", [{"name": "data", "interface": "net1",
                                         "cni-args": {"mesh": {"enabled": True, "outboundPort": "x"}}}],
             "mesh.outboundPort"),
        ]
        for what, elements, named in cases:
            with self.subTest(selection=what):
                self.setup_pod(elements)
                add = self.add()
                self.assertCniError(add, 7)
                self.assertIn(named, add.error["msg"])
                self.assertEqual(self.pod.link_names(), ["lo"])
                self.assertNotIn("mfbr0", self.node.link_names(), "the cluster delegate ran")
                self.assertNothingLeft()


if __name__ == "__main__":
    main()
