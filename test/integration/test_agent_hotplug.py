#!/usr/bin/env python3
"""Hot-plug by `manifold agent`, end to end: an operator changes a running pod's networks
annotation with `kubectl annotate --overwrite`, and the agent attaches or detaches the networks in
the pod's namespace (real macvlan links, real host-local reservations), records them in manifold's
cache, rewrites the network-status (which `kubectl get pod -o yaml` shows) and sends one
AddedInterface / RemovedInterface event per change. Also: a pod that started without secondary
networks gains some; a network attached without an interface name is unplugged; two changes in
quick succession; the same NAD twice; a failing delegate leaves the pod as it was, is reported and
retried; an invalid annotation is reported once and not retried; a stopped agent changes nothing
for CNI ADD and DEL; /metrics and /healthz.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import METRICS_PORT, AgentTestCase, http_get_in_netns  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import NETWORK_STATUS  # noqa: E402


class HotPlugTest(AgentTestCase):
    """Networks added and removed on a running pod."""

    def setUp(self):
        super().setUp()
        self.add_blue_and_green()
        self.write_k8s()

    def added(self, networks=None):
        """The pod, ADDed by the runtime with `networks` as its annotation."""
        self.add_node_pod(networks)
        self.assertOk(self.add())

    def test_hotplug_into_a_pod_without_secondary_networks(self):
        self.added()
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster"})
        self.start_agent()
        self.annotate("blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertIn("net1", self.pod.link_names())
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.100/24"])
        self.assertEqual(self.entry_ifnames(), ["eth0", "net1"])
        self.assertTrue(any(r.endswith("198.51.100.100") for r in self.tree.reservations()), "no IPAM reservation")
        # Events follow the status write.
        self.wait_for(lambda: "Add net1 [198.51.100.100/24] from default/blue" in self.events("AddedInterface"),
                      "the AddedInterface event")
        yaml = self.kubectl("get", "pod", self.pod_name, "-n", "default", "-o", "yaml")
        self.assertIn(NETWORK_STATUS, yaml)
        self.assertIn("default/blue", yaml)
        samples = self.metrics()
        self.assertGreaterEqual(samples["manifold_agent_attachments_added_total"], 1)
        self.assertGreaterEqual(samples['manifold_agent_reconciles_total{result="changed"}'], 1)
        self.assertEqual(samples["manifold_agent_sandboxes_tracked"], 1)
        # The runtime's DEL removes the hot-plugged network too: nothing is left.
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_unplug_a_network_attached_without_an_interface_name(self):
        self.added("blue,green")
        self.assertEqual(self.entry_ifnames(), ["eth0", "net1", "net2"])
        reservations = sorted(self.tree.reservations())
        self.start_agent()
        self.annotate("green")
        self.wait_status({"eth0": "cluster", "net2": "default/green"})
        self.assertNotIn("net1", self.pod.link_names())
        self.assertIn("net2", self.pod.link_names())
        self.assertEqual(self.entry_ifnames(), ["eth0", "net2"])
        self.assertEqual(len(self.tree.reservations()), len(reservations) - 1, "blue's IP was not released")
        self.wait_for(lambda: self.events("RemovedInterface") == ["Remove net1 from default/blue"],
                      "the RemovedInterface event")
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_two_changes_in_quick_succession(self):
        self.added()
        self.start_agent()
        self.annotate("blue")
        self.annotate("green@data0")
        self.wait_status({"eth0": "cluster", "data0": "default/green"})
        self.assertEqual(sorted(self.pod.link_names()), ["data0", "eth0", "lo"])
        self.assertEqual(self.entry_ifnames(), ["eth0", "data0"])
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_the_same_nad_twice(self):
        self.added()
        self.start_agent()
        self.annotate("blue,blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue", "net2": "default/blue"})
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.100/24"])
        self.assertEqual(self.pod.addresses("net2"), ["198.51.100.101/24"])
        self.annotate("blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertNotIn("net2", self.pod.link_names())
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_failing_delegate_leaves_the_pod_unchanged_is_reported_and_retried(self):
        self.added()
        self.api.add_nad("default", "broken", self.fake_conf("fake-fail", failMsg="no VF left"))
        self.start_agent()
        self.annotate("broken")
        self.wait_for(lambda: any("no VF left" in m for m in self.events("NetworkChangeFailed")),
                      "a NetworkChangeFailed event")
        self.assertEqual(sorted(self.pod.link_names()), ["eth0", "lo"])
        self.assertEqual(self.entry_ifnames(), ["eth0"])
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster"})
        # Retried with backoff: once the NAD is fixed, the next retry attaches it (no pod event).
        self.api.add_nad("default", "broken", self.hostlocal_nad_conf(subnet="192.0.2.0/24", start="192.0.2.100"))
        self.wait_status({"eth0": "cluster", "net1": "default/broken"})
        self.assertGreaterEqual(self.metrics()['manifold_agent_attachments_failed_total{operation="attach"}'], 1)
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_an_invalid_annotation_is_reported_once_and_waits_for_a_change(self):
        self.added()
        self.start_agent()
        self.annotate('[{"name": "blue", "interface": "a/b"}]')
        self.wait_for(lambda: self.events("InvalidNetworks"), "an InvalidNetworks event")
        self.api.modify_pod("default", self.pod_name, labels={"touched": "yes"})  # another MODIFIED event
        self.annotate("blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertEqual(len(self.events("InvalidNetworks")), 1)
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_cni_add_and_del_work_with_the_agent_stopped(self):
        agent = self.start_agent()
        self.assertEqual(self.stop_agent(agent), 0)
        self.added("blue")
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster", "net1": "default/blue"})
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_healthz_reports_the_watch(self):
        self.start_agent()
        status, body = http_get_in_netns(self.node.path, METRICS_PORT, "/healthz")
        self.assertEqual((status, body), (200, "ok\n"))


if __name__ == "__main__":
    main()
