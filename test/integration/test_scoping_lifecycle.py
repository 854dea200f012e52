#!/usr/bin/env python3
"""Network scoping through its whole lifecycle, driven through the libcni driver with Debian's
plugins, for iptablesMode nft and legacy:

- ADD puts our jumps first, ahead of a mesh's own PROXY_INIT_* / ISTIO_* rules loaded before;
  DEL, DEL leaves no CNIMESH line, no rule at our priority and empty tables, and leaves the mesh's
  chains and another attachment's CNIMESH chain exactly as they were;
- CHECK passes after ADD and fails (107) after any single deletion (a chain rule, a jump (IPv4 and
  IPv6), the ip rule, a table route) and after any single change (a REDIRECT port, a table route,
  the rule's table, a duplicated jump, the mesh's own jump put before ours);
- a second ADD of the same container and interface through the runtime is refused with 102 by
  design (manifold never adopts an interface it did not create) and changes nothing: iptables-save,
  `ip rule` and our tables stay identical and CHECK still passes (that the scoping layer itself is
  idempotent when applied twice is test/integration/scoping); the cache holds the scoping state
  (backend, families, chains, tables, rule priority, IPs);
- DEL removes the scoping before the delegate's DEL runs (a wrapper delegate snapshots the
  namespace at that moment), and ADD applies it only after the delegate's ADD;
- DEL succeeds when the namespace is gone; without the cache it still removes our chains (by name)
  and our rules (by the attachment's addresses, or by the IPs of the runtime's prevResult when the
  interface has lost them);
- a bad scoping config is error 7 and creates nothing (no delegate runs);
- the three layers: top-level defaults, overridden per network; the keys never reach a delegate.
"""
import json
import os
import re
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from scoping_world import (NET1, PRIORITY, ScopingTestCase, backend_binary, cluster_conf,  # noqa: E402
                           mesh, net1_conf)

CONTAINER = "ctr-scoping-lifecycle"
MODES = ("nft", "legacy")

# A Linkerd-like mesh's own rules (appended, unscoped) and an Istio-like chain, loaded before ADD,
# plus another attachment's chain that is not ours to touch.
FOREIGN = """*nat
:PROXY_INIT_OUTPUT - [0:0]
:PROXY_INIT_REDIRECT - [0:0]
:ISTIO_INBOUND - [0:0]
:CNIMESH-IN-net7 - [0:0]
-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT
-A PREROUTING -p tcp -j ISTIO_INBOUND
-A PREROUTING -i net7 -p tcp -j CNIMESH-IN-net7
-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT
-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN
-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191 -m comment --comment "proxy-init/ignore-port-4190,4191" -j RETURN
-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN
-A CNIMESH-IN-net7 -p tcp -j REDIRECT --to-ports 4143
COMMIT
"""


def iptables(mode, family):
    """iptables-nft, ip6tables-legacy, ..."""
    return "%s-%s" % ("iptables" if family == 4 else "ip6tables", mode)


def without_counters(save):
    """iptables-save text with packet counters zeroed (legacy counts what traverses a chain)."""
    return re.sub(r"\[\d+:\d+\]", "[0:0]", save)


def rules_of(save, chain):
    """The -A lines of one chain, in order."""
    return [line for line in save.splitlines() if line.startswith("-A %s " % chain)]


class ScopingLifecycleTest(ScopingTestCase):
    """Lifecycle, CHECK, bad configs and layering."""

    def load(self, mode, family, payload):
        self.pod.exec("sh", "-c", "%s --noflush <<'EOF'\n%sEOF" % (backend_binary(mode, family, "restore"),
                                                                    payload))

    def add(self, mode):
        self.write_scoped(mode)
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertOk(add)
        return add

    # ---- ADD, DEL, DEL ---------------------------------------------------------------------------

    def run_add_del_del(self, mode):
        families = [4, 6] if self.v6 else [4]
        for family in families:
            self.load(mode, family, FOREIGN)
        before = {f: without_counters(self.nat_save(mode, f)) for f in families}
        rules_before = self.pod.ip("rule", "show")

        self.add(mode)
        for family in families:
            with self.subTest(mode=mode, family=family):
                save = self.nat_save(mode, family)
                self.assertIn("-j CNIMESH-IN-net1", rules_of(save, "PREROUTING")[0])
                self.assertIn("-j CNIMESH-OUT-net1", rules_of(save, "OUTPUT")[0])
                for line in before[family].splitlines():
                    if line.startswith("-A"):
                        self.assertIn(line, save, "foreign rule lost on ADD")
        self.assertEqual(sorted(r["src"] for r in self.our_rules()),
                         sorted(NET1[f] for f in families))
        self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))

        for attempt in ("first DEL", "second DEL"):
            self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER), attempt)
            for family in families:
                with self.subTest(mode=mode, family=family, attempt=attempt):
                    save = without_counters(self.nat_save(mode, family))
                    self.assertEqual(save, before[family])
                    self.assertNotIn("net1", save)
            self.assertEqual(self.our_rules(), [], attempt)
            self.assertEqual(self.pod.ip("rule", "show"), rules_before, attempt)
            self.assertEqual(self.table(1000), [], attempt)
            self.assertEqual(self.table(1001), [], attempt)
            self.assertNothingLeft()

    def test_add_del_del_nft(self):
        self.run_add_del_del("nft")

    def test_add_del_del_legacy(self):
        self.run_add_del_del("legacy")

    # ---- DEL without namespace or cache ---------------------------------------------------------

    def test_del_succeeds_when_the_namespace_is_gone(self):
        self.add("legacy")
        self.pod.delete()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))

    def test_del_without_the_cache_still_removes_our_rules(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                self.add(mode)
                self.assertNotEqual(self.our_rules(), [])
                for name in self.tree.cache_files():
                    os.unlink(os.path.join(self.tree.cni_dir, name))
                self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
                self.assertEqual(self.our_rules(), [])
                self.assertEqual(self.table(1000), [])
                for family in ([4, 6] if self.v6 else [4]):
                    self.assertNotIn("CNIMESH", self.nat_save(mode, family))
                # Without a record nothing proves the links are ours: the delegates released their
                # addresses but left the interfaces, which go with the namespace.
                self.assertEqual(self.tree.reservations(), [])
                for link in ("net1", "eth0"):
                    if link in self.pod.link_names():
                        self.pod.ip("link", "del", link)

    def test_del_without_the_cache_works_from_the_prev_result_ips(self):
        # returnAllResults: the runtime's cached result (its prevResult on DEL) lists net1's IPs.
        self.write_scoped("nft", returnAllResults=True)
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        for name in self.tree.cache_files():
            os.unlink(os.path.join(self.tree.cni_dir, name))
        # The interface no longer names its IPs: only prevResult can tell which rules are ours.
        self.pod.ip("addr", "flush", "dev", "net1")
        self.assertNotEqual(self.our_rules(), [])
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertEqual(self.our_rules(), [])
        for family in ([4, 6] if self.v6 else [4]):
            self.assertNotIn("CNIMESH", self.nat_save("nft", family))
        self.assertEqual(self.tree.reservations(), [])
        for link in ("net1", "eth0"):
            if link in self.pod.link_names():
                self.pod.ip("link", "del", link)
        self.assertNothingLeft()

    # ---- CHECK -----------------------------------------------------------------------------------

    def run_check_after_each_deletion(self, mode):
        deletions = [
            ("a rule of our inbound chain", [iptables(mode, 4), "-t", "nat", "-D", "CNIMESH-IN-net1", "1"]),
            ("our outbound jump", [iptables(mode, 4), "-t", "nat", "-D", "OUTPUT", "1"]),
            ("the ip rule", ["ip", "rule", "del", "priority", str(PRIORITY), "from", NET1[4], "lookup", "1000"]),
            ("a table route", ["ip", "route", "del", "default", "table", "1000"]),
        ]
        if self.v6:
            deletions.append(("our IPv6 inbound jump",
                              [iptables(mode, 6), "-t", "nat", "-D", "PREROUTING", "1"]))
        ipt = iptables(mode, 4)
        changes = [
            ("the inbound REDIRECT port changed",
             [ipt, "-t", "nat", "-R", "CNIMESH-IN-net1", "2", "-p", "tcp", "-m", "comment", "--comment",
              "cnimesh/net1/redirect-inbound", "-j", "REDIRECT", "--to-ports", "9999"]),
            ("a table route changed",
             ["ip", "route", "replace", "default", "via", "198.51.100.2", "dev", "net1", "table", "1000"]),
            ("the ip rule pointing at another table",
             ["sh", "-c", "ip rule del priority %d from %s lookup 1000 && "
                          "ip rule add priority %d from %s lookup 1234" % (PRIORITY, NET1[4], PRIORITY, NET1[4])]),
            ("a second jump to our chain",
             [ipt, "-t", "nat", "-A", "PREROUTING", "-i", "net1", "-p", "tcp", "-j", "CNIMESH-IN-net1"]),
            ("the mesh's own jump put before ours",
             ["sh", "-c", "%s -t nat -N PROXY_INIT_REDIRECT && %s -t nat -I PREROUTING 1 -j PROXY_INIT_REDIRECT"
                          % (ipt, ipt)]),
        ]
        for what, command in deletions + changes:
            with self.subTest(mode=mode, deleted=what):
                self.add(mode)
                self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER), "before: " + what)
                self.pod.exec(*command)
                self.assertCniError(self.driver("check", self.pod.path, container_id=CONTAINER), 107,
                                    "CHECK passed after: " + what)
                self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
                self.assertNotIn("CNIMESH", self.nat_save(mode, 4))
                # What the test itself put there is not ours: DEL leaves it, the test removes it.
                if "PROXY_INIT_REDIRECT" in self.nat_save(mode, 4):
                    self.pod.exec(ipt, "-t", "nat", "-D", "PREROUTING", "-j", "PROXY_INIT_REDIRECT")
                    self.pod.exec(ipt, "-t", "nat", "-X", "PROXY_INIT_REDIRECT")
                self.pod.exec("ip", "rule", "del", "priority", str(PRIORITY), "lookup", "1234", check=False)
                self.assertEqual(self.our_rules(), [])
                self.assertNothingLeft()

    def test_check_fails_after_each_single_deletion_nft(self):
        self.run_check_after_each_deletion("nft")

    def test_check_fails_after_each_single_deletion_legacy(self):
        self.run_check_after_each_deletion("legacy")

    # ---- re-ADD, cached state ----------------------------------------------------------------------

    def snapshot(self, mode):
        """Everything scoping may change in the pod: nat tables, rules, our tables."""
        families = [4, 6] if self.v6 else [4]
        return {"nat": {f: without_counters(self.nat_save(mode, f)) for f in families},
                "rules": [self.pod.exec("ip", "-%d" % f, "rule", "show").stdout for f in families],
                "tables": [self.table(1000), self.table(1001)]}

    def scoping_state(self, ifname):
        """extra.scoping of attachment `ifname` in manifold's cache entry."""
        files = self.tree.cache_files()
        self.assertEqual(len(files), 1, files)
        with open(os.path.join(self.tree.cni_dir, files[0]), encoding="utf-8") as f:
            record = json.load(f)
        for attachment in record["attachments"]:
            if attachment["ifname"] == ifname:
                return attachment["extra"].get("scoping")
        self.fail("no attachment %s in %s" % (ifname, json.dumps(record)))
        return None

    def test_second_add_is_refused_and_changes_nothing(self):
        families = [4, 6] if self.v6 else [4]
        for mode in MODES:
            with self.subTest(mode=mode):
                self.add(mode)
                state = self.scoping_state("net1")
                self.assertEqual(state["mesh"]["backend"], mode)
                self.assertEqual(state["mesh"]["families"], families)
                self.assertEqual(state["mesh"]["chains"], ["CNIMESH-IN-net1", "CNIMESH-OUT-net1"])
                self.assertEqual(state["sourceRouting"]["priority"], PRIORITY)
                self.assertEqual(state["sourceRouting"]["tables"], [1000, 1001][:len(families)])
                self.assertEqual(state["sourceRouting"]["ips"], [NET1[f] for f in families])
                self.assertIsNone(self.scoping_state("eth0"))
                # Table 1000 holds a copy of net1's main routes plus the default via the gateway;
                # main keeps its own (copied, not moved).
                copied = sorted((r["dst"], r.get("gateway"), r["dev"]) for r in self.table(1000))
                self.assertEqual(copied, sorted([("default", "198.51.100.1", "net1"),
                                                 ("100.64.0.0/16", "198.51.100.1", "net1"),
                                                 ("198.51.100.0/24", None, "net1")]))
                main_net1 = sorted((r["dst"], r.get("gateway")) for r in self.pod.routes(4) if r.get("dev") == "net1")
                self.assertEqual(main_net1, [("100.64.0.0/16", "198.51.100.1"), ("198.51.100.0/24", None)])
                before = self.snapshot(mode)
                again = self.driver("add", self.pod.path, container_id=CONTAINER)
                self.assertCniError(again, 102)
                self.assertEqual(self.snapshot(mode), before)
                self.assertEqual(self.scoping_state("net1"), state)
                self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))
                self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
                self.assertNotIn("CNIMESH", self.nat_save(mode, 4))
                self.assertEqual(self.our_rules(), [])
                self.assertNothingLeft()

    # ---- ordering against the delegate ------------------------------------------------------------

    def snapshot_delegate(self, name, snapshot_dir):
        """A delegate `name` in CNI_PATH that runs macvlan after writing, per verb, what the pod's
        namespace holds at that moment (nat tables of both backends and families, ip rules)."""
        script = os.path.join(self.tree.bin_dir, name)
        commands = []
        for tool in ("iptables-nft-save", "ip6tables-nft-save", "iptables-legacy-save", "ip6tables-legacy-save"):
            commands.append('nsenter --net="$CNI_NETNS" %s -t nat 2>/dev/null' % tool)
        commands += ['nsenter --net="$CNI_NETNS" ip -4 rule show', 'nsenter --net="$CNI_NETNS" ip -6 rule show']
        with open(script, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n"
                    'if [ -n "$CNI_NETNS" ]; then\n'
                    '  { %s; } > "%s/$CNI_COMMAND" 2>&1\n'
                    "fi\n"
                    "exec /usr/lib/cni/macvlan\n" % ("; ".join(commands), snapshot_dir))
        os.chmod(script, stat.S_IRWXU)

    def test_scoping_comes_after_the_delegate_add_and_before_its_del(self):
        snapshots = self.tree.path("snapshots")
        os.makedirs(snapshots)
        self.snapshot_delegate("macvlan-snap", snapshots)
        net1 = net1_conf(self.v6, mesh("nft"), {"enabled": True})
        net1["type"] = "macvlan-snap"
        self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, self.v6), net1])
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertIn("CNIMESH-IN-net1", self.nat_save("nft", 4))
        self.assertNotEqual(self.our_rules(), [])
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        for verb in ("ADD", "DEL"):
            with self.subTest(delegate_verb=verb):
                with open(os.path.join(snapshots, verb), encoding="utf-8") as f:
                    seen = f.read()
                self.assertIn("*nat", seen, "the snapshot did not run")
                self.assertNotIn("CNIMESH", seen)
                self.assertNotIn("%d:" % PRIORITY, seen)
        self.assertNothingLeft()

    # ---- iptablesMode auto ------------------------------------------------------------------------

    def test_auto_mode_uses_the_backend_the_namespace_already_uses(self):
        # A fresh namespace: nft. A namespace whose legacy tables hold the mesh's rules: legacy.
        for preloaded, expected, other in ((None, "nft", "legacy"), ("legacy", "legacy", "nft")):
            with self.subTest(preloaded=preloaded):
                if preloaded:
                    self.load(preloaded, 4, FOREIGN)
                self.write_scoped("auto")
                self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
                self.assertEqual(self.scoping_state("net1")["mesh"]["backend"], expected)
                self.assertIn("-j CNIMESH-IN-net1", rules_of(self.nat_save(expected, 4), "PREROUTING")[0])
                self.assertNotIn("CNIMESH-IN-net1", self.nat_save(other, 4))
                self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))
                self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
                self.assertNotIn("net1", self.nat_save(expected, 4))
                if preloaded:
                    self.assertIn("-j PROXY_INIT_REDIRECT", self.nat_save(preloaded, 4))
                self.assertNothingLeft()

    # ---- bad configs -----------------------------------------------------------------------------

    def test_bad_configs_are_error_7_and_create_nothing(self):
        rules_before = self.pod.ip("rule", "show")
        cases = [
            ("a port out of range", {"mesh": mesh("nft", inboundPort=70000)}, {}, "mesh.inboundPort"),
            ("a malformed ignored port", {"mesh": mesh("nft", inboundPortsToIgnore=["41x0"])}, {},
             "mesh.inboundPortsToIgnore"),
            ("a reversed port range", {"mesh": mesh("nft", outboundPortsToIgnore=["90-80"])}, {},
             "mesh.outboundPortsToIgnore"),
            ("a CIDR of the wrong family", {"mesh": mesh("nft", inboundSubnetsToIgnoreV4=["2001:db8::/64"])}, {},
             "mesh.inboundSubnetsToIgnoreV4"),
            ("a non-numeric UID", {"mesh": mesh("nft", proxyUID="linkerd")}, {}, "mesh.proxyUID"),
            ("a bad iptablesMode", {"mesh": mesh("iptables")}, {}, "mesh.iptablesMode"),
            ("a rule priority after main's", {"sourceRouting": {"enabled": True, "rulePriority": 40000}}, {},
             "sourceRouting.rulePriority"),
            ("a scoping key that is no object", {"sourceRouting": True}, {}, "sourceRouting"),
            ("a bad top-level default", {}, {"mesh": {"enabled": "yes"}}, "mesh.enabled"),
            ("an unknown key", {"mesh": mesh("nft", inboundPorts=[80])}, {}, "mesh.inboundPorts"),
        ]
        for what, net1_keys, top, field in cases:
            with self.subTest(config=what):
                conf = net1_conf(self.v6)
                conf.update(net1_keys)
                self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, self.v6), conf], **top)
                add = self.driver("add", self.pod.path, container_id=CONTAINER)
                self.assertCniError(add, 7)
                self.assertIn(field, add.error["msg"])
                self.assertEqual(self.pod.link_names(), ["lo"])
                self.assertEqual(self.pod.ip("rule", "show"), rules_before)
                self.assertNotIn("CNIMESH", self.nat_save("nft", 4))
                self.assertNotIn("mfbr0", self.node.link_names(), "the cluster delegate ran")
                self.assertNothingLeft()

    # ---- layers ----------------------------------------------------------------------------------

    def test_network_layer_overrides_top_level_and_keys_never_reach_delegates(self):
        cluster = cluster_conf(self.tree.ipam_dir, self.v6)
        cluster["mesh"] = {"enabled": False}
        cluster["sourceRouting"] = {"enabled": False}
        net1 = net1_conf(self.v6, mesh={"inboundPort": 4243})
        recorded = self.fake_conf("fake-record", name="recorded", address="203.0.113.5/24",
                                  mesh={"enabled": False}, sourceRouting={"enabled": False})
        self.write_manifold("1.0.0", [cluster, net1, recorded],
                            mesh=mesh("nft", outboundPort=4241),
                            sourceRouting={"enabled": True, "tableBase": 2000})
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        save = self.nat_save("nft", 4)
        self.assertNotIn("CNIMESH-IN-eth0", save)
        self.assertNotIn("CNIMESH-IN-net2", save)
        self.assertEqual([line.split("--to-ports ")[1] for line in rules_of(save, "CNIMESH-IN-net1")
                          if "REDIRECT" in line], ["4243"])
        self.assertEqual([line.split("--to-ports ")[1] for line in rules_of(save, "CNIMESH-OUT-net1")
                          if "REDIRECT" in line], ["4241"])
        self.assertEqual(sorted((r["src"], r["table"]) for r in self.our_rules()),
                         sorted((NET1[f], str(2000 + i)) for i, f in enumerate([4, 6] if self.v6 else [4])))
        for record in self.tree.records():
            self.assertNotIn("mesh", record["config"])
            self.assertNotIn("sourceRouting", record["config"])
        self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNotIn("CNIMESH", self.nat_save("nft", 4))
        self.assertEqual(self.our_rules(), [])
        self.assertNothingLeft()


    def test_keys_never_reach_delegates_on_gc_and_status(self):
        recorded = self.fake_conf("fake-record", "1.1.0", name="recorded", address="203.0.113.5/24",
                                  mesh={"enabled": False}, sourceRouting={"enabled": False})
        self.write_manifold("1.1.0", [recorded])
        self.assertOk(self.driver("status", ""))
        self.assertOk(self.driver("gc", "", valid_attachments=[]))
        records = self.tree.records()
        self.assertEqual(sorted(r["command"] for r in records), ["GC", "STATUS"])
        for record in records:
            self.assertNotIn("mesh", record["config"], record["command"])
            self.assertNotIn("sourceRouting", record["config"], record["command"])
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
