#!/usr/bin/env python3
"""Crash consistency of MultiNetworkPolicy enforcement (scenario "policy"): with Kubernetes and
`multiNetworkPolicy` enabled (nft), the cluster network (bridge + host-local, eth0) and one NAD, a
macvlan with a static address (net1) that a policy in the pod's namespace covers, so ADD lists the
policies and puts MNP-IN/OUT-net1 into the pod's filter table (both families) after the delegate is
marked started and before it runs. Every TLS write to the API, every iptables-save and
iptables-restore started and every rule set fed to it is a step. manifold is killed at every
side-effect step of ADD, CHECK (which lists the policies again), DEL and GC and fails at cache and
netlink calls (crash/campaign.py); after the runtime's recovery no MNP chain or jump may be left in
either backend or family, nothing else may be left, and a fresh ADD and DEL of the same container
must work.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from crash.campaign import KEEP, CrashMixin  # noqa: E402
from crash.residue import Places  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase, pod_cni_args  # noqa: E402 (puts the double's modules on the path)
from kdouble.access import manifold_rbac  # noqa: E402
from policy_k8s import LIST_POLICIES  # noqa: E402

KEEP_POD = "crash-keep"
POLICY = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
          "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}]},
                      {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}], "ports": [{"port": 8080}]}],
          "egress": [{"to": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]}]}


class CrashPolicyTest(CrashMixin, K8sTestCase):
    """One campaign per verb on [bridge + host-local, NAD macvlan static covered by a policy]."""

    scenario = "policy"

    def setUp(self):
        super().setUp()
        self.api.set_rbac(manifold_rbac() + [LIST_POLICIES])
        self.api.add_nad("default", "mac-static", self.macvlan_nad_conf("198.51.100.10/24"))
        self.api.add_multi_network_policy("default", "crash-policy", POLICY, policy_for="mac-static")
        self.addCleanup(self.api.delete_object, "multi-networkpolicies", "crash-policy", namespace="default")
        networks = {NETWORKS: "mac-static"}
        self.add_pod(networks)
        self.add_pod(networks, name=KEEP_POD, uid="uid-" + KEEP_POD)
        self.write_k8s(version="1.1.0", multiNetworkPolicy={"enabled": True, "iptablesMode": "nft"})

    def invoke(self, verb, container, ns, valid):
        """The libcni driver's call with the pod's CNI_ARGS (GC: only the valid attachments)."""
        if verb == "GC":
            return self.driver("gc", "", valid_attachments=valid)
        pod = KEEP_POD if container == KEEP else self.pod_name
        args = pod_cni_args("default", pod, "uid-" + pod, container)
        return self.driver(verb.lower(), ns.path, container_id=container, cni_args=args)

    def places(self):
        """The test's namespaces and directories."""
        return Places(self.pod, self.node, self.tree.cni_dir, self.tree.ipam_dir, self.tree.libcni_cache)


if __name__ == "__main__":
    main()
