#!/usr/bin/env python3
"""The reference scoping experiment (a mesh proxy serving one network of a two-network pod) as
automated tests: rows T1-T7 and T11, driven through the libcni driver with Debian's bridge, macvlan, host-local and static
plugins, for iptablesMode nft and legacy, IPv4 and (where the kernel has it) IPv6. net1 carries
the mesh redirect and source routing in its network config; eth0 carries neither.

  T1  remote from an address only net1's source table knows -> net1:8080: the proxy's inbound port
      with the original destination; without sourceRouting the reply leaves via eth0: timeout
  T2  remote -> net1:8080: the proxy's inbound port with the original destination
  T3  remote -> net1:4191 (an ignored port): refused, not redirected
  T4  cluster side -> eth0:8080: the app, not redirected (the inbound REDIRECT's counter, which
      rises for T2, stays flat)
  T5  app (UID 1000) -> remote:80 via net1: the proxy's outbound port with the original destination
  T6  app -> cluster side via eth0: not redirected
  T7  proxy (UID 2102) -> remote:80 via net1: not recaptured
  T11 proxy -> net1's own address:8080 (via lo): the app, not recaptured
Outcomes are asserted, never durations. Without sourceRouting, T1's "no answer" is proven by where
the reply goes, not by how long the client waited: `ip route get <peer> from <net1 IP>` in the pod
says eth0, a counting rule in the cluster side's raw PREROUTING sees the pod's SYN-ACK arrive there
(polled until seen, the bound only stops a broken test), and the same counter in the gateway stays
at zero. With sourceRouting, the same lookup says net1.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from scoping_world import (APP_UID, CLUSTER_GW, NET1, PROXY_UID, REMOTE, REMOTE_SBR,  # noqa: E402
                           ScopingTestCase, fmt)

CONTAINER = "ctr-scoping-reference"
WATCH = "mf-scoping-watch"
# How long to wait for a packet that must come: only a broken test ever waits this long.
PACKET_BOUND_SECONDS = 60


class ReferenceRowsTest(ScopingTestCase):
    """T1-T7 and T11 per backend and family."""

    def expected_rows(self, family, eth0):
        """(row, namespace, host, port, uid, bind, expected reply prefix) for one family."""
        net1 = NET1[family]
        return [
            ("T1", self.remote, net1, 8080, None, REMOTE_SBR[family],
             "proxy-in local=%s orig=%s" % (fmt(net1, 4143), fmt(net1, 8080))),
            ("T2", self.remote, net1, 8080, None, REMOTE[family],
             "proxy-in local=%s orig=%s" % (fmt(net1, 4143), fmt(net1, 8080))),
            ("T3", self.remote, net1, 4191, None, REMOTE[family], "refused"),
            ("T4", self.node, eth0, 8080, None, None,
             "app local=%s orig=%s" % (fmt(eth0, 8080), fmt(eth0, 8080))),
            ("T5", self.pod, REMOTE[family], 80, APP_UID, None,
             "proxy-out local=%s orig=%s" % (fmt("127.0.0.1" if family == 4 else "::1", 4140),
                                              fmt(REMOTE[family], 80))),
            ("T6", self.pod, CLUSTER_GW[family], 80, APP_UID, None,
             "clus local=%s" % fmt(CLUSTER_GW[family], 80)),
            ("T7", self.pod, REMOTE[family], 80, PROXY_UID, None,
             "remote local=%s" % fmt(REMOTE[family], 80)),
            ("T11", self.pod, net1, 8080, PROXY_UID, None,
             "app local=%s orig=%s" % (fmt(net1, 8080), fmt(net1, 8080))),
        ]

    # ---- where a packet goes, without timing -----------------------------------------------------

    def reply_route_dev(self, family):
        """The device the pod routes a reply from net1's address to T1's peer through."""
        routes = self.pod.ip_json("-%d" % family, "route", "get", REMOTE_SBR[family], "from", NET1[family])
        return routes[0].get("dev")

    def watch(self, ns, family, src, dst):
        """A counting rule (no verdict) in ns's raw PREROUTING for TCP from src to dst."""
        tool = "iptables" if family == 4 else "ip6tables"
        ns.exec(tool, "-t", "raw", "-I", "PREROUTING", "-s", src, "-d", dst, "-p", "tcp",
                "-m", "comment", "--comment", WATCH)

    def watched(self, ns, family):
        """The packet count of the watch rule in ns."""
        tool = "iptables" if family == 4 else "ip6tables"
        out = ns.exec(tool, "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n").stdout
        counts = [int(line.split()[0]) for line in out.splitlines() if WATCH in line]
        self.assertEqual(len(counts), 1, out)
        return counts[0]

    def wait_watched(self, ns, family):
        """The watch count once it is non-zero (polled; the bound only ends a broken test)."""
        deadline = time.monotonic() + PACKET_BOUND_SECONDS
        count = self.watched(ns, family)
        while count == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            count = self.watched(ns, family)
        return count

    def inbound_redirects(self, mode, family):
        """Packets counted by the REDIRECT rule of the pod's CNIMESH-IN-net1 chain."""
        tool = "%s-%s" % ("iptables" if family == 4 else "ip6tables", mode)
        out = self.pod.exec(tool, "-t", "nat", "-L", "CNIMESH-IN-net1", "-v", "-x", "-n").stdout
        counts = [int(line.split()[0]) for line in out.splitlines() if "REDIRECT" in line]
        self.assertEqual(len(counts), 1, out)
        return counts[0]

    # ---- rows ------------------------------------------------------------------------------------

    def run_rows(self, mode):
        self.start_services()
        self.write_scoped(mode)
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertOk(add)
        self.assertIn("CNIMESH-IN-net1", self.nat_save(mode, 4))
        for family in ([4, 6] if self.v6 else [4]):
            self.assertEqual(self.reply_route_dev(family), "net1")
            eth0 = self.eth0_ip(add.result, family)
            for row, ns, host, port, uid, bind, expected in self.expected_rows(family, eth0):
                with self.subTest(mode=mode, family=family, row=row):
                    redirected = self.inbound_redirects(mode, family)
                    got = self.probe(ns, host, port, uid=uid, bind=bind)
                    self.assertTrue((got + " ").startswith(expected + " "),
                                    "%s IPv%d %s: expected %r, got %r\n%s" % (
                                        mode, family, row, expected, got, self.nat_save(mode, family)))
                    # The inbound REDIRECT counts T2's connection and none of T4's (eth0).
                    if row == "T2":
                        self.assertGreater(self.inbound_redirects(mode, family), redirected)
                    if row == "T4":
                        self.assertEqual(self.inbound_redirects(mode, family), redirected)
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNotIn("CNIMESH", self.nat_save(mode, 4))
        self.assertNothingLeft()

    def test_rows_nft(self):
        self.run_rows("nft")

    def test_rows_legacy(self):
        self.run_rows("legacy")

    def run_without_source_routing(self, mode):
        """T1's other half: the mesh alone cannot answer a peer only net1's table knows, because
        the reply leaves through eth0 (shown by counters, not by a timeout)."""
        self.start_services()
        self.write_scoped(mode, net1_sbr=False)
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertEqual(self.our_rules(), [])
        for family in ([4, 6] if self.v6 else [4]):
            with self.subTest(mode=mode, family=family):
                self.assertEqual(self.reply_route_dev(family), "eth0")
                self.watch(self.node, family, NET1[family], REMOTE_SBR[family])
                self.watch(self.gw, family, NET1[family], REMOTE_SBR[family])
                # The client's outcome is not the evidence (it cannot succeed: no reply reaches it).
                got = self.probe(self.remote, NET1[family], 8080, bind=REMOTE_SBR[family], timeout=1)
                self.assertFalse(got.startswith("proxy-in "), got)
                self.assertGreater(self.wait_watched(self.node, family), 0,
                                   "the SYN-ACK never reached the cluster side")
                # Every packet from net1's address to the peer is routed alike: none went via net1.
                self.assertEqual(self.watched(self.gw, family), 0)
                # The same peer's neighbour inside the IPAM route is still answered.
                self.assertTrue(self.probe(self.remote, NET1[family], 8080, bind=REMOTE[family])
                                .startswith("proxy-in "))
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_t1_reply_leaves_via_eth0_without_source_routing_nft(self):
        self.run_without_source_routing("nft")

    def test_t1_reply_leaves_via_eth0_without_source_routing_legacy(self):
        self.run_without_source_routing("legacy")


if __name__ == "__main__":
    main()
