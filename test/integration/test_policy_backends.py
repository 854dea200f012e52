#!/usr/bin/env python3
"""MultiNetworkPolicy rules in both iptables backends (nft and legacy), on attachments made by both
Debian delegates that share a segment between pods (bridge on mfpol0, macvlan on the node's veth),
over IPv4 and IPv6:

- an allowed peer gets through, another is refused, and CHECK passes; the rules sit in the chosen
  backend only, as MNP-IN-net1 jumped to from INPUT for net1 alone (eth0 and the other backend
  untouched);
- with denyAction "drop" a refused connection gets no answer at all: the probe's bounded wait ends
  and the packet counter of our deny rule proves the SYN was dropped there;
- removal takes everything away (nothing of ours in either backend), and a second removal runs
  nothing; a state only planned (a kill before the backend was known) is removed from whichever
  backend holds it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ci, main  # noqa: E402
from harness.netns import run  # noqa: E402
from policy_world import PolicyTestCase, policy  # noqa: E402

ONLY_A = policy("only-a", {"podSelector": {"matchLabels": {"app": "web"}},
                           "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "a"}}}]}]})


def backend_usable(mode):
    return run(["iptables-%s-save" % mode, "--version"], check=False).returncode == 0


class Backends:
    """The scenario, for each backend; mixed into one class per delegate kind."""

    def setUp(self):
        super().setUp()
        self.web = self.add_pod("web", {"app": "web"})
        self.a = self.add_pod("client-a", {"role": "a"})
        self.b = self.add_pod("client-b", {"role": "b"})
        self.serve(self.web, "tcp:8080", "udp:53")

    def scenario(self, mode):
        if not backend_usable(mode):
            ci.skip_or_fail(self, "iptables-%s is not installed" % mode)
        web, a, b = self.web, self.a, self.b
        state = self.apply(web, [ONLY_A], mode=mode)
        self.assertEqual(state["backend"], mode)
        self.assertTraffic([(a, web, "tcp", 8080, True), (a, web, "udp", 53, True),
                            (b, web, "tcp", 8080, False), (b, web, "udp", 53, False)])
        self.assertEqual(self.check(web, state, [ONLY_A], mode=mode), [])
        other = "legacy" if mode == "nft" else "nft"
        for family in self.families:
            saved = self.filter_save(web, mode, family)
            self.assertIn('-A INPUT -i net1 -m comment --comment "mnp/net1/ingress" -j MNP-IN-net1', saved)
            self.assertNotIn("eth0", saved)
            if backend_usable(other):
                self.assertNotIn("MNP-", self.filter_save(web, other, family))
        self.remove(web, state, mode)
        self.assertNoPolicyRules(web)
        self.remove(web, state, mode)  # idempotent
        self.assertTraffic([(b, web, "tcp", 8080, True)])

    def drop_scenario(self, mode):
        if not backend_usable(mode):
            ci.skip_or_fail(self, "iptables-%s is not installed" % mode)
        web, a, b = self.web, self.a, self.b
        self.apply(web, [ONLY_A], mode=mode, deny="drop")
        for family in self.families:
            before = self.deny_count(web, mode, family)
            self.assertEqual(self.probe(b, web, "tcp", 8080, family, timeout=2), "timeout")
            self.assertGreater(self.deny_count(web, mode, family), before, "IPv%d SYN not dropped by us" % family)
            self.assertAllowed(a, web, "tcp", 8080, family)

    def planned_removal(self, mode):
        if not backend_usable(mode):
            ci.skip_or_fail(self, "iptables-%s is not installed" % mode)
        state = self.apply(self.web, [ONLY_A], mode=mode)
        planned = dict(state, backend=None, applied=False)
        self.remove(self.web, planned, "auto")
        self.assertNoPolicyRules(self.web)

    def test_nft(self):
        self.scenario("nft")

    def test_legacy(self):
        self.scenario("legacy")

    def test_drop_nft(self):
        self.drop_scenario("nft")

    def test_drop_legacy(self):
        self.drop_scenario("legacy")

    def test_planned_state_legacy(self):
        self.planned_removal("legacy")


class BridgeBackends(Backends, PolicyTestCase):
    kind = "bridge"


class MacvlanBackends(Backends, PolicyTestCase):
    kind = "macvlan"

    def setUp(self):
        self.require_link_kind("macvlan")
        super().setUp()


if __name__ == "__main__":
    main()
