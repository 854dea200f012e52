"""The MultiNetworkPolicy world with Kubernetes (not a test file itself): policy_world.py's pods,
now created in the API server double and attached by manifold's ADD with their CNI_ARGS, with
`multiNetworkPolicy` enabled, so the rules come from the ADD itself. Network "blue" is a NAD in
namespace default: a conflist of Debian's bridge plugin (bridge mfpol0, host-local, both
families) and `fake-probe` (test/integration/plugins), which runs the commands a pod's selection
element passes in its `cni-args` right after the bridge plugin created the interface, before
manifold gets its result: what a connection attempt meets at the first moment the interface
exists. The double enforces the shipped ClusterRole plus the one rule enforcement needs (LIST of
multi-networkpolicies); the objects policy_tool gets are the pods as the double stores them, with
the network-status manifold wrote.
"""
import json
import os
import sys

from k8s_case import NETWORKS, K8sTestCase, pod_cni_args
from kdouble.access import manifold_rbac
from policy_world import POLICY_BRIDGE, PROBE, SUBNETS, Pod, PolicyTestCase

LIST_POLICIES = {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["multi-networkpolicies"], "verbs": ["list"]}
ENFORCE = {"enabled": True, "iptablesMode": "nft", "denyAction": "reject"}


class PolicyK8sTestCase(PolicyTestCase, K8sTestCase):
    """Pods in the double, attached by ADD with MultiNetworkPolicy enforced."""

    policy_key = ENFORCE
    node_name = "node1"  # the node the pods are scheduled on (the agent's tests: its node)

    def setUp(self):
        super().setUp()
        self.api.set_rbac(manifold_rbac() + [LIST_POLICIES])
        self.api.add_nad("default", "blue", self.blue_nad())
        self.probe_record = self.tree.path("probes.jsonl")

    def write_world(self, **top):
        """The manifold config with this test's kubeconfig and multiNetworkPolicy. A delegate may
        take long here (fake-probe runs its probes inside the ADD, each a Python start): its bound
        is generous, as it must be for answers that must come on a loaded machine."""
        if self.policy_key is not None:
            top.setdefault("multiNetworkPolicy", self.policy_key)
        top.setdefault("delegateTimeout", 180)
        self.write_k8s(**top)

    def blue_nad(self):
        v4, v6 = SUBNETS["bridge"]
        ranges = [[{"subnet": v4}]] + ([[{"subnet": v6}]] if self.v6 else [])
        return {"cniVersion": "1.0.0", "name": "blue", "plugins": [
            {"type": "bridge", "bridge": POLICY_BRIDGE, "isGateway": False, "ipMasq": False,
             "ipam": {"type": "host-local", "dataDir": self.tree.ipam_dir, "ranges": ranges}},
            {"type": "fake-probe"}]}

    def add_policy(self, name, spec, policy_for="blue"):
        """A MultiNetworkPolicy in namespace default (removed when the test ends); its object."""
        self.api.add_multi_network_policy("default", name, spec, policy_for=policy_for)
        self.addCleanup(self.api.delete_object, "multi-networkpolicies", name, namespace="default")
        return self.api.get_object("multi-networkpolicies", name, namespace="default")

    def k8s_name(self, name):
        return "%s-%s" % (self.pod_name[:40].strip("-"), name)

    def add_pod(self, name, labels=None, ns="default", probes=None, expect_ok=True, prepare=None):
        """The pod in the double (networks: blue, with `probes` as cni-args), then its ADD;
        `prepare(pod)` runs in between, when the pod's namespace exists but has no net1 yet."""
        element = {"name": "blue", "namespace": "default"}
        if probes:
            element["cni-args"] = {"probes": probes, "probeRecord": self.probe_record}
        k8s_name, uid = self.k8s_name(name), "uid-" + self.k8s_name(name)
        self.api.add_pod(ns, k8s_name, uid=uid, labels=labels or {}, node_name=self.node_name,
                         annotations={NETWORKS: json.dumps([element])})
        netns = self.new_netns()
        self.quiet_sysctls(netns)
        container_id = "ctr-%s-%s" % (name, netns.name)
        args = pod_cni_args(ns, k8s_name, uid, container_id)
        pod = Pod(name, ns, netns, container_id, labels or {}, {})
        pod.k8s_name, pod.cni_args = k8s_name, args
        if prepare:
            prepare(pod)
        run = self.driver("add", netns.path, container_id=container_id, cni_args=args, timeout=300)
        if not expect_ok:
            return pod, run
        self.assertOk(run)
        self.addCleanup(self._del_k8s_pod, pod)
        for family in self.families:
            pod.ips[family] = netns.addresses("net1", family)[0].split("/")[0]
        self.pods.append(pod)
        return pod

    def _del_k8s_pod(self, pod):
        self.assertOk(self.driver("del", pod.netns.path, container_id=pod.container_id, cni_args=pod.cni_args))

    def pod_object(self, pod):
        """The pod as the double stores it: labels and the network-status manifold wrote."""
        stored = self.api.get_pod(pod.namespace, pod.k8s_name)
        stored.setdefault("spec", {})["containers"] = pod.object()["spec"]["containers"]
        return stored

    def cached_policy_state(self, pod):
        """The policy state ADD recorded for the pod's net1."""
        path = self.tree.cache_entry_path(pod.container_id)
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        for attachment in entry["attachments"]:
            if attachment["ifname"] == "net1":
                return attachment["extra"].get("policy")
        self.fail("no net1 in %s" % path)
        return None

    def probe_argv(self, src, proto, port, family, **kw):
        """A probe command for `probes`: from src's net1 to the new pod's net1 ({ip4}/{ip6})."""
        argv = ["ip", "netns", "exec", src.netns.name, sys.executable, "-B", PROBE, "connect", proto,
                "{ip%d}" % family, str(port), "--bind", src.ips[family], "--timeout", "20"]
        for key, value in kw.items():
            argv += ["--" + key, str(value)]
        return argv

    def probe_outcomes(self):
        """What each probe run during ADD printed, in order."""
        if not os.path.exists(self.probe_record):
            return []
        with open(self.probe_record, encoding="utf-8") as f:
            return [json.loads(line)["out"].split(" peer=")[0] for line in f if line.strip()]
