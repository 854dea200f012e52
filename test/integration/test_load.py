#!/usr/bin/env python3
"""Load: 100 pods attached and detached concurrently on one node through the libcni driver.

Every pod gets three networks: the cluster network (bridge + host-local, eth0) and two macvlan
networks (net1 on the test's macvlan master, net2 on its ipvlan master, used here as a second
macvlan master), each with host-local IPAM. All pods share the three host-local ranges and one
data dir, so host-local's and manifold's locking are exercised by up to WORKERS concurrent calls.

Phase 1 ADDs the 100 pods concurrently, checks every result, that no address was handed out
twice (neither in the results nor in host-local's data dir) and that manifold's cache holds one
parsable record per pod listing the right interfaces and addresses; then DELs them concurrently
and checks that everything was released. Phase 2 runs, for every pod, a sequence of ADD and DEL
of the same container ID (half of them start with a DEL of a container never added), the
sequences interleaved in random order across the workers, and ends with nothing left.

Total time and pods/s are printed, never asserted (the machine is shared).
"""
import concurrent.futures
import ipaddress
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import IPVLAN_MASTER, MACVLAN_MASTER, ManifoldTestCase, ips_on, main  # noqa: E402
from harness.netns import Netns  # noqa: E402

PODS = int(os.environ.get("MANIFOLD_LOAD_PODS", "100"))
WORKERS = int(os.environ.get("MANIFOLD_LOAD_WORKERS", "24"))
NET1_SUBNET = "198.51.100.0/24"
NET2_SUBNET = "203.0.113.0/24"
IFNAMES = ["eth0", "net1", "net2"]


def hostlocal_macvlan(name, master, subnet, data_dir):
    """macvlan on master with a host-local range shared by every pod."""
    return {"cniVersion": "1.0.0", "name": name, "type": "macvlan", "master": master,
            "mode": "bridge",
            "ipam": {"type": "host-local", "subnet": subnet, "dataDir": data_dir}}


def container_id(i):
    """The container ID of pod i (the same in both phases)."""
    return "load-%03d-%s" % (i, "c" * 40)


class LoadTest(ManifoldTestCase):
    """100 pods x 3 networks, concurrently, twice."""

    def setUp(self):
        super().setUp()
        delegates = [self.cluster_conf(),
                     hostlocal_macvlan("loadnet1", MACVLAN_MASTER, NET1_SUBNET, self.tree.ipam_dir),
                     hostlocal_macvlan("loadnet2", IPVLAN_MASTER, NET2_SUBNET, self.tree.ipam_dir)]
        # returnAllResults: the runtime sees every attachment's addresses. The delegate timeout
        # covers WORKERS calls queued on one host-local lock of a loaded machine.
        self.write_manifold("1.0.0", delegates, delegateTimeout=120, returnAllResults=True)
        self.pods = self._make_namespaces(PODS)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS)
        self.addCleanup(self.pool.shutdown)

    def _make_namespaces(self, count):
        """count pod namespaces, created in parallel, deleted when the test ends."""
        spare = [Netns() for _ in range(count)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            created = list(pool.map(lambda ns: ns.__enter__(), spare))
        for ns in created:
            self.addCleanup(ns.delete)
        return created

    def call(self, verb, i):
        """One driver call for pod i, with a timeout generous enough for a loaded machine."""
        return self.driver(verb, self.pods[i].path, container_id=container_id(i), timeout=300)

    def run_all(self, fn, items):
        """fn(item) for every item on the pool; returns the results in item order."""
        return list(self.pool.map(fn, items))

    # ---- invariants ------------------------------------------------------------------------------

    def reserved_ips(self):
        """{ip: container id} from host-local's reservation files (one file per address)."""
        out = {}
        for rel in self.tree.reservations():
            with open(os.path.join(self.tree.ipam_dir, rel), encoding="utf-8") as f:
                owner = f.read().splitlines()[0].strip()
            ip = os.path.basename(rel)
            self.assertNotIn(ip, out, "host-local reserved %s twice" % ip)
            out[ip] = owner
        return out

    def cache_records(self):
        """{containerId: record} for every manifold cache file; each must parse."""
        out = {}
        for rel in self.tree.cache_files():
            path = os.path.join(self.tree.cni_dir, rel)
            with open(path, encoding="utf-8") as f:
                try:
                    record = json.load(f)
                except ValueError as exc:
                    self.fail("cache file %s does not parse: %s" % (rel, exc))
            self.assertNotIn(record["containerId"], out, "two cache files for one container")
            out[record["containerId"]] = record
        return out

    def assertResultsDistinct(self, results):
        """Each result has one address per interface, in the right subnet, none shared."""
        seen = {}
        for i, result in results.items():
            for ifname, subnet in (("eth0", "192.0.2.0/24"), ("net1", NET1_SUBNET),
                                   ("net2", NET2_SUBNET)):
                addresses = ips_on(result, ifname)
                self.assertEqual(len(addresses), 1, "pod %d %s: %s" % (i, ifname, addresses))
                ip = ipaddress.ip_interface(addresses[0]).ip
                self.assertIn(ip, ipaddress.ip_network(subnet))
                self.assertNotIn(str(ip), seen, "%s handed to pod %d and pod %s" % (
                    ip, i, seen.get(str(ip))))
                seen[str(ip)] = i
        return seen

    def assertCacheMatches(self, results):
        """One record per live container listing its three interfaces with the result's IPs."""
        records = self.cache_records()
        self.assertEqual(sorted(records), sorted(container_id(i) for i in results))
        for i, result in results.items():
            record = records[container_id(i)]
            self.assertEqual(record["netns"], self.pods[i].path)
            self.assertEqual([a["ifname"] for a in record["attachments"]], IFNAMES)
            for attachment in record["attachments"]:
                cached = json.loads(attachment["result"])
                self.assertEqual([ip["address"] for ip in cached["ips"]],
                                 ips_on(result, attachment["ifname"]),
                                 "pod %d %s" % (i, attachment["ifname"]))

    def assertAllReleased(self):
        """No reservation, no cache file, no link in any pod, no stray link on the node."""
        self.assertEqual(self.tree.reservations(), [], "host-local reservations left")
        self.assertEqual(self.tree.cache_files(), [], "manifold cache files left")
        self.assertEqual(self.tree.libcni_cache_files(), [], "libcni cache entries left")
        leftover = [ns.name for ns in self.pods if ns.link_names() != ["lo"]]
        self.assertEqual(leftover, [], "pods with links left")
        self.assertEqual(self.stray_node_links(), [], "links left in the node namespace")

    # ---- the test --------------------------------------------------------------------------------

    def test_load(self):
        indices = list(range(PODS))

        # Phase 1: concurrent ADD of every pod, then concurrent DEL.
        start = time.monotonic()
        adds = self.run_all(lambda i: self.call("add", i), indices)
        add_time = time.monotonic() - start
        for run in adds:
            self.assertOk(run)
        results = {i: run.result for i, run in enumerate(adds)}
        handed = self.assertResultsDistinct(results)
        reserved = self.reserved_ips()
        self.assertEqual(sorted(reserved), sorted(ip for ip in handed if ip != "192.0.2.1"))
        for ip, owner in reserved.items():
            self.assertEqual(owner, container_id(handed[ip]), "reservation of %s" % ip)
        self.assertCacheMatches(results)
        for i in random.sample(indices, 5):
            self.assertEqual(self.pods[i].link_names(), ["eth0", "lo", "net1", "net2"])

        start = time.monotonic()
        dels = self.run_all(lambda i: self.call("del", i), indices)
        del_time = time.monotonic() - start
        for run in dels:
            self.assertOk(run)
        self.assertAllReleased()

        # Phase 2: per pod, ADD/DEL sequences of the same container ID, interleaved across workers.
        rng = random.Random()
        plans = {i: (["del", "add", "del", "add", "del"] if i % 2 else ["add", "del", "add", "del"])
                 for i in indices}
        order = list(indices)
        rng.shuffle(order)

        def run_plan(i):
            outcome = []
            for verb in plans[i]:
                before = time.monotonic()
                run = self.call(verb, i)
                outcome.append((verb, run, before, time.monotonic()))
                if run.rc != 0:
                    break
            return i, outcome

        start = time.monotonic()
        mixed = self.run_all(run_plan, order)
        mixed_time = time.monotonic() - start
        calls = 0
        windows = []  # (ip, pod, held from: ADD returned, held until: DEL started)
        for i, outcome in mixed:
            held = None
            for verb, run, began, ended in outcome:
                calls += 1
                self.assertOk(run, "pod %d %s" % (i, verb))
                if verb == "add":
                    addresses = [a for n in IFNAMES for a in ips_on(run.result, n)]
                    self.assertEqual(len(addresses), 3, "pod %d: %s" % (i, addresses))
                    held = (addresses, ended)
                elif held:
                    windows += [(str(ipaddress.ip_interface(a).ip), i, held[1], began)
                                for a in held[0]]
                    held = None
        self.assertEqual(calls, sum(len(p) for p in plans.values()))
        # An address may be reused, but never by two containers holding it at the same time.
        by_ip = {}
        for ip, pod, held_from, held_until in windows:
            by_ip.setdefault(ip, []).append((held_from, held_until, pod))
        for ip, spans in by_ip.items():
            spans.sort()
            for (_, until_a, pod_a), (from_b, _, pod_b) in zip(spans, spans[1:]):
                self.assertLessEqual(until_a, from_b, "%s held by pods %d and %d at once" % (
                    ip, pod_a, pod_b))
        self.assertEqual(calls, sum(len(p) for p in plans.values()))
        self.assertAllReleased()

        total = add_time + del_time + mixed_time
        print("\nload: %d pods x %d networks, %d workers, %d CPUs" % (
            PODS, len(IFNAMES), WORKERS, os.cpu_count()))
        print("load: ADD %.1fs (%.1f pods/s), DEL %.1fs (%.1f pods/s), "
              "mixed ADD/DEL %d calls %.1fs (%.1f calls/s), total %.1fs" % (
                  add_time, PODS / add_time, del_time, PODS / del_time, calls, mixed_time,
                  calls / mixed_time, total))


if __name__ == "__main__":
    main()
