#!/usr/bin/env python3
"""MultiNetworkPolicy enforced by ADD itself (`multiNetworkPolicy` enabled), with the pods, NADs and
policies in the API server double and real traffic between pods attached by manifold:

- in force from the first packet: a pod whose policy exists before its ADD never accepts a
  forbidden connection, probed by `fake-probe` in the NAD's chain right after the bridge plugin
  created the interface (and before manifold had its result), IPv4 and IPv6, TCP and UDP; what
  needs no peer (an ipBlock) is open at once, what needs peers (a podSelector) is closed until they
  are known; filling them in as the node agent will (policy_tool, from the pods the double stores,
  with the network-status manifold wrote) opens exactly the allowed peer; egress likewise;
- CHECK passes after ADD, fails (107) when a rule goes missing or the policies change;
- DEL leaves nothing of ours in either backend; a failed ADD (the status write refused after the
  rules went in) leaves nothing either;
- an invalid policy (a selector that does not validate, policy-for naming a network that does not
  exist) gets a Warning event naming it and closes the pod's network both ways;
- without the key a config behaves as before: no policy is read, no rule written;
- the API refusing the LIST (an error, or RBAC without the grant) fails the ADD, nothing left;
- iptablesMode legacy puts the rules in the legacy tables only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from k8s_case import STATUS_PUT  # noqa: E402 (puts the API double's modules on the path)
from kdouble.access import manifold_rbac  # noqa: E402
from policy_k8s import ENFORCE, PolicyK8sTestCase  # noqa: E402
from policy_world import NETWORK, REFUSED, SUBNETS  # noqa: E402

WEB = {"matchLabels": {"app": "web"}}


def web_policy(v6):
    blocks = [{"ipBlock": {"cidr": SUBNETS["bridge"][0]}}] + ([{"ipBlock": {"cidr": SUBNETS["bridge"][1]}}] if v6 else [])
    return {"podSelector": WEB, "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                         "ports": [{"port": 8080}, {"protocol": "UDP", "port": 53}]},
                        {"from": blocks, "ports": [{"port": 9090}]}],
            "egress": [{"to": blocks, "ports": [{"port": 8080}]}]}


class PolicyAdd(PolicyK8sTestCase):
    def clients(self):
        a = self.add_pod("client-a", {"role": "client"})
        b = self.add_pod("client-b", {"role": "other"})
        for pod in (a, b):
            self.serve(pod, "tcp:8080", "tcp:9090")
        return a, b

    def add_web(self, probes=None, **kw):
        return self.add_pod("web", {"app": "web"}, probes=probes,
                            prepare=lambda pod: self.serve(pod, "tcp:8080", "tcp:9090", "udp:53"), **kw)

    def test_in_force_from_the_first_packet(self):
        a, b = self.clients()
        policy = self.add_policy("web", web_policy(self.v6))
        probes, expected = [], []
        for family in self.families:
            probes += [self.probe_argv(a, "tcp", 8080, family), self.probe_argv(a, "udp", 53, family),
                       self.probe_argv(a, "tcp", 9090, family)]
            expected += [REFUSED[family], REFUSED[family], "web tcp:9090"]
        web = self.add_web(probes)
        self.assertEqual(self.probe_outcomes(), expected, "probes run the moment net1 existed")
        self.assertTraffic([(a, web, "tcp", 8080, False), (b, web, "tcp", 8080, False),
                            (a, web, "udp", 53, False), (b, web, "tcp", 9090, True),
                            (web, a, "tcp", 8080, True), (web, a, "tcp", 9090, False, True)])
        state = self.cached_policy_state(web)
        self.assertEqual((state["network"], state["backend"], state["applied"], state["complete"]),
                         (NETWORK, "nft", True, False))
        self.assertEqual(state["families"], self.families)
        self.assertOk(self.driver("check", web.netns.path, container_id=web.container_id, cni_args=web.cni_args))

        # The peers become known (the node agent's part, here policy_tool): exactly a opens.
        restored, state = self.reapply(web, state, [policy])
        self.assertEqual(restored, len(self.families))
        self.assertTraffic([(a, web, "tcp", 8080, True), (a, web, "udp", 53, True), (b, web, "tcp", 8080, False)])

        self.assertOk(self.driver("del", web.netns.path, container_id=web.container_id, cni_args=web.cni_args))
        self.assertNoPolicyRules(web)
        self.assertFalse(os.path.exists(self.tree.cache_entry_path(web.container_id)))

    def test_check_follows_the_policies(self):
        a, _ = self.clients()
        self.add_policy("web", web_policy(self.v6))
        web = self.add_web()

        def check():
            return self.driver("check", web.netns.path, container_id=web.container_id, cni_args=web.cni_args)

        self.assertOk(check())
        rule = ["MNP-IN-net1", "-m", "comment", "--comment", "mnp/net1/deny", "-j", "REJECT", "--reject-with",
                "icmp-admin-prohibited"]
        web.netns.exec("iptables-nft", "-D", *rule)
        run = check()
        self.assertCniError(run, 107)
        self.assertErrorMentions(run, "net1: IPv4: MNP-IN-net1 is missing the rule", "mnp/net1/deny")
        web.netns.exec("iptables-nft", "-A", *rule)
        self.assertOk(check())
        self.add_policy("more", {"podSelector": {}, "ingress": [{"ports": [{"port": 22}]}]})
        run = check()
        self.assertCniError(run, 107)
        self.assertErrorMentions(run, "MNP-IN-net1 is missing the rule", "mnp/net1/more ingress[0]")
        self.assertTraffic([(a, web, "tcp", 9090, True)])

    def test_invalid_policies_close_with_a_warning(self):
        a, _ = self.clients()
        cases = [("bad-selector", {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}, "blue",
                  "spec.podSelector.matchExpressions[0].values: must list at least one value"),
                 ("typo", {"podSelector": WEB}, "blue,gren",
                  "names network default/gren, which does not exist")]
        for name, spec, policy_for, error in cases:
            with self.subTest(name):
                self.api.clear_events()
                self.add_policy(name, spec, policy_for)
                web = self.add_pod("web-" + name, {"app": "web"},
                                   prepare=lambda pod: self.serve(pod, "tcp:8080", label="web"))
                warnings = [e for e in self.api.events() if e.get("reason") == "InvalidMultiNetworkPolicy"]
                self.assertEqual(len(warnings), 1, self.api.events())
                self.assertEqual(warnings[0]["type"], "Warning")
                self.assertEqual(warnings[0]["involvedObject"]["name"], web.k8s_name)
                self.assertIn("MultiNetworkPolicy default/%s: " % name, warnings[0]["message"])
                self.assertIn(error, warnings[0]["message"])
                self.assertTraffic([(a, web, "tcp", 8080, False), (web, a, "tcp", 8080, False, True)])
                self.api.delete_object("multi-networkpolicies", name, namespace="default")

    def test_a_failed_add_leaves_nothing(self):
        a, _ = self.clients()
        self.add_policy("web", web_policy(self.v6))
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="status", status=403, count=None)
        web, run = self.add_web(expect_ok=False)
        self.assertCniError(run, 103)
        self.assertNoPolicyRules(web)
        self.assertEqual(web.netns.link_names(), ["lo"])
        self.assertFalse(os.path.exists(self.tree.cache_entry_path(web.container_id)))

    def test_the_list_refused_fails_the_add(self):
        self.clients()
        for how in ("error", "rbac"):
            with self.subTest(how):
                self.api.clear_faults()
                if how == "error":
                    self.api.add_fault(path="multi-networkpolicies$", action="status", status=500, count=None)
                else:
                    # A role of an older release, without the list the shipped one grants.
                    self.api.set_rbac([r for r in manifold_rbac()
                                       if "multi-networkpolicies" not in r["resources"]])
                web, run = self.add_web(expect_ok=False)
                self.assertCniError(run, 103)
                self.assertErrorMentions(run, "multi-networkpolicies")
                if how == "rbac":
                    self.assertErrorMentions(run, "forbidden")
                self.assertNoPolicyRules(web)
                self.assertEqual(web.netns.link_names(), ["lo"])

    def test_without_the_key_nothing_is_read_or_written(self):
        self.write_world(multiNetworkPolicy=None)
        a, b = self.clients()
        self.add_policy("web", web_policy(self.v6))
        self.api.clear_requests()
        web = self.add_web()
        self.assertEqual([e["path"] for e in self.requests() if "multi-networkpolicies" in e["path"]], [])
        self.assertNoPolicyRules(web)
        self.assertTraffic([(b, web, "tcp", 8080, True)])

    def test_legacy_backend(self):
        self.write_world(multiNetworkPolicy=dict(ENFORCE, iptablesMode="legacy"))
        a, b = self.clients()
        self.add_policy("web", web_policy(self.v6))
        web = self.add_web()
        self.assertEqual(self.cached_policy_state(web)["backend"], "legacy")
        for family in self.families:
            self.assertIn("MNP-IN-net1", self.filter_save(web, "legacy", family))
            self.assertNotIn("MNP-", self.filter_save(web, "nft", family))
        self.assertTraffic([(a, web, "tcp", 8080, False), (b, web, "tcp", 9090, True)])
        self.assertOk(self.driver("del", web.netns.path, container_id=web.container_id, cni_args=web.cni_args))
        self.assertNoPolicyRules(web)


if __name__ == "__main__":
    main()
