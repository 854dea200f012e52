#!/usr/bin/env python3
"""A live node moved from Multus thin to manifold, as the README's "Migrating from Multus" says.

The node starts as a Multus node: manifold's DaemonSet and generated config are taken away, and
Multus thin v4 (built from its Go module, installed by its own DaemonSet manifest, unchanged) wraps
the cluster network. Two pods get secondary networks from Multus (a macvlan and a bridge NAD).
Then manifold is installed by `kubectl apply` of conf/, and Multus removed: its DaemonSet and RBAC,
its config, kubeconfig and binaries, but not its cache. A new pod is attached by manifold. The
pods Multus attached are deleted: manifold, which the runtime now calls for them, reads what Multus
cached and gives every delegate the DEL of what it added — their links, host-local reservations,
Multus's and libcni's cache files, everything goes (the harness's leak check). Last, the node is
given back its plain manifold install for the next scenario.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from node.images import REPO  # noqa: E402
from node.up import MANIFESTS, generated_config  # noqa: E402
from scenario import multus  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402

MANIFOLD_DS = os.path.join(REPO, "conf", "manifold-daemonset.yaml")


class MigrationFromMultus(ClusterTestCase):
    """Multus's pods deleted cleanly by manifold after the switch; new pods get manifold."""

    settle_timeout = 150

    def test_multus_pods_are_deleted_by_manifold(self):
        bins = multus.build()
        self._remove_manifold()
        self.addCleanup(self._restore_manifold)
        self._install_multus(bins)
        networks = self._nads()
        for pod, selection in (("a", "macvlan,bridge"), ("b", "macvlan")):
            self.create_pod(pod, networks=selection, wait=False)
        for pod in ("a", "b"):
            self.cluster.wait_for("pod/" + pod, "condition=Ready", self.namespace)
        attached = self._check_multus_attached(networks)

        self._install_manifold()
        self.assertEqual(self._generated()["name"], "multus-cni-network",
                         "the generated config did not keep Multus's network name")
        multus.uninstall(self.cluster)
        self.create_pod("c", networks="macvlan")
        status = self.cluster.network_status(self.namespace, "c")
        self.assertEqual([s["interface"] for s in status], ["eth0", "net1"], status)
        self.assertTrue(any(f.startswith("manifold/") and not f.startswith("manifold/.")
                            for f in self.view.cni_state()), "manifold cached nothing for pod c")
        self.assertEqual(multus.cached(self.cluster.node), attached, "Multus's cache changed")

        logged = len(self._manifold_log_lines("was attached by Multus"))
        for pod in ("a", "b"):
            self.delete_pod(pod)
        self.cluster.wait("manifold to DEL what Multus attached",
                          lambda: not multus.cached(self.cluster.node), timeout=120)
        reserved = [f for f in self.view.cni_state() if f.startswith("networks/mig")]
        self.assertEqual(len(reserved), 1, reserved)  # pod c's macvlan address alone
        log = self._manifold_log_lines("was attached by Multus")
        self.assertEqual(len(log), logged + 2, log)
        self.delete_pod("c")

    # -- the node's CNI set-up ------------------------------------------------------------------

    def _generated(self):
        path = generated_config(self.cluster.node.layout)
        if not path:
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def _remove_manifold(self):
        """The node as it was before manifold: no agent, no generated config."""
        self.cluster.kubectl("delete", "-f", MANIFOLD_DS, "--wait=true", timeout=150)
        self.cluster.wait("the agent's pod to go", lambda: not self.cluster.kubectl(
            "get", "pods", "-n", "kube-system", "-l", "app=manifold", "-o", "name").stdout,
            timeout=120)
        os.unlink(generated_config(self.cluster.node.layout))

    def _install_manifold(self):
        """The README's install: kubectl apply of conf/, until the agent wrote its config."""
        args = ["apply"]
        for name in MANIFESTS:
            args += ["-f", os.path.join(REPO, "conf", name)]
        self.cluster.kubectl(*args)
        self.cluster.kubectl("-n", "kube-system", "rollout", "status", "daemonset/manifold",
                             "--timeout=180s", timeout=200)
        self.cluster.wait("the agent's generated config", self._generated, timeout=120)

    def _restore_manifold(self):
        """Back to the node up.sh made: Multus gone, manifold installed under its default name
        (the test's pods deleted first: their DELs need the name they were added under)."""
        self.cluster.kubectl("delete", "pods", "--all", "-n", self.namespace, "--wait=true",
                             "--timeout=120s", timeout=150)
        multus.uninstall(self.cluster)
        multus.remove_image(self.cluster.node)
        if self.cluster.get("daemonset", "manifold", "kube-system", check=False) is None:
            self._install_manifold()
        config = generated_config(self.cluster.node.layout)
        if self._generated()["name"] != "manifold-cni-network":
            os.unlink(config)  # the agent writes it again, under the default name now
            self.cluster.wait("the agent's config under its default name", lambda: (
                self._generated() or {}).get("name") == "manifold-cni-network", timeout=120)

    def _install_multus(self, bins):
        multus.import_image(self.cluster.node, bins)
        self.cluster.kubectl("apply", "-f", os.path.join(bins, multus.MANIFEST))
        self.cluster.kubectl("-n", multus.NAMESPACE, "rollout", "status",
                             "daemonset/" + multus.DAEMONSET, "--timeout=180s", timeout=200)
        conf = self.cluster.node.layout.inside("/etc/cni/net.d/00-multus.conflist")
        self.cluster.wait("Multus's 00-multus.conflist", lambda: os.path.exists(conf), timeout=60)
        with open(conf, encoding="utf-8") as f:
            config = json.load(f)
        self.assertEqual(config["plugins"][0]["type"], "multus")
        self.assertEqual(config["plugins"][0]["delegates"][0]["name"], layout.CLUSTER_NETWORK)
        binary = self.cluster.node.layout.inside("/opt/cni/bin/multus")
        self.assertTrue(os.access(binary, os.X_OK), binary)

    # -- the pods' networks ---------------------------------------------------------------------

    def _nads(self):
        """A macvlan NAD on a host veth and a bridge NAD on a bridge of the test's, host-local
        both; returns their network names."""
        master = self.host_veth()
        bridge = self.unique("mgbr")
        self.cluster.node.run(["ip", "link", "add", bridge, "type", "bridge"], mount=False)
        self._links.append(bridge)
        self.baseline = dict(self.baseline, links=sorted(self.baseline["links"] + [bridge]))
        names = {"macvlan": "mig-mv-" + self.namespace, "bridge": "mig-br-" + self.namespace}
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": names["macvlan"], "type": "macvlan",
                             "master": master, "mode": "bridge", "ipam": {
                                 "type": "host-local", "ranges": [[{
                                     "subnet": "192.0.2.0/24", "rangeStart": "192.0.2.70",
                                     "rangeEnd": "192.0.2.79"}]]}})
        self.nad("bridge", {"cniVersion": "1.0.0", "name": names["bridge"], "plugins": [{
            "type": "bridge", "bridge": bridge, "ipam": {"type": "host-local", "ranges": [[{
                "subnet": "198.51.100.0/24", "rangeStart": "198.51.100.10",
                "rangeEnd": "198.51.100.19"}]]}}, {"type": "tuning", "mtu": 1400}]})
        return names

    def _check_multus_attached(self, networks):
        """Multus, not manifold, attached pods a and b; returns Multus's cache files."""
        for pod, count in (("a", 3), ("b", 2)):
            status = self.cluster.network_status(self.namespace, pod)
            self.assertEqual(len(status), count, status)
            links = self.cluster.pod_links(self.namespace, pod)
            self.assertEqual(links, ["eth0", "lo", "net1", "net2"][:count + 1], links)
        self.assertIn("mtu 1400", self.cluster.exec(self.namespace, "a", "ip", "link", "show",
                                                    "net2").stdout)
        self.assertFalse([f for f in self.view.cni_state()
                          if f.startswith("manifold/") and not f.startswith("manifold/.")])
        cached = multus.cached(self.cluster.node)
        scratch = [f for f in cached if "/" not in f]
        self.assertEqual(len(scratch), 2, cached)
        for network in networks.values():
            self.assertTrue(any(f.startswith("results/%s-" % network) for f in cached), cached)
        return cached

    def _manifold_log_lines(self, text):
        path = self.cluster.node.layout.inside("/var/log/manifold.log")
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line for line in f if text in line]


if __name__ == "__main__":
    main()
