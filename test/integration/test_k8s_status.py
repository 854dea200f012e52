#!/usr/bin/env python3
"""The k8s.v1.cni.cncf.io/network-status annotation, end to end: compared byte for byte with what
Multus (the NAD client's CreateNetworkStatuses + MarshalIndent) writes for the very results the
delegates returned, `default: true` only on the cluster network, `gateway` only where a default
route exists (and then the gateway actually installed), and no status for pods of
systemNamespaces (checked against the pod's namespace, not its name as Multus does).
"""
import ipaddress
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import BRIDGE, main  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase, api_paths  # noqa: E402


def _bare(address):
    return str(ipaddress.ip_interface(address).ip)


def _is_default(dst):
    return ipaddress.ip_network(dst, strict=False).prefixlen == 0


def multus_entries(result, name, is_default):
    """The entries Multus's NAD client builds from one CNI 1.0 result (CreateNetworkStatuses), in
    Go's struct field order with omitempty. A default route without "gw" has no counterpart here:
    Multus would write "<nil>", so the tests below give every default route a gateway."""
    interfaces = result.get("interfaces") or []
    ips = result.get("ips") or []
    gateways = []
    for route in result.get("routes") or []:
        if _is_default(route["dst"]):
            assert "gw" in route, "Multus would write <nil> for %s" % route
            gateways.append(_bare(route["gw"]))
    dns = {k: v for k, v in (result.get("dns") or {}).items() if v}

    def entry(iface, addrs, default):
        e = {"name": name}
        if iface and iface.get("sandbox"):
            e["interface"] = iface["name"]
        if addrs:
            e["ips"] = addrs
        if iface and iface.get("sandbox") and iface.get("mac"):
            e["mac"] = iface["mac"]
        if iface and iface.get("sandbox") and iface.get("mtu"):
            e["mtu"] = iface["mtu"]
        if default:
            e["default"] = True
        e["dns"] = dns
        if gateways:
            e["gateway"] = gateways
        return e

    if len(interfaces) == 1:
        return [entry(interfaces[0], [_bare(ip["address"]) for ip in ips], is_default)]
    gw_index = None
    if is_default:
        for ip in ips:
            if ip.get("gateway") and ip.get("interface") is not None:
                gw_index = ip["interface"]
                break
    out, by_index, default_set = [], {}, False
    for i, iface in enumerate(interfaces):
        if not iface.get("sandbox"):
            continue
        default = is_default and not default_set and (gw_index is None or gw_index == i)
        default_set = default_set or default
        by_index[i] = len(out)
        out.append((iface, [], default))
    for ip in ips:
        idx = ip.get("interface")
        if idx is not None and idx in by_index:
            out[by_index[idx]][1].append(_bare(ip["address"]))
        elif idx is None and out:
            out[-1][1].append(_bare(ip["address"]))
    return [entry(iface, addrs, default) for iface, addrs, default in out]


def multus_annotation(entries):
    """Multus's serialisation: each entry MarshalIndent(e, "", "    "), joined by "," in [...]."""
    return "[" + ",".join(json.dumps(e, indent=4) for e in entries) + "]"


class K8sStatusTest(K8sTestCase):
    """network-status content and where it is (not) written."""

    def cached_attachments(self):
        """The attachments of the test's container, from manifold's cache."""
        files = self.tree.cache_files()
        self.assertEqual(len(files), 1, files)
        with open(os.path.join(self.tree.cni_dir, files[0]), encoding="utf-8") as f:
            return json.load(f)["attachments"]

    def cluster_with_gateway(self):
        """bridge + host-local whose default route carries its gateway (isDefaultGateway)."""
        conf = self.cluster_conf()
        del conf["ipam"]["routes"]
        conf["isDefaultGateway"] = True
        return conf

    def test_annotation_is_byte_identical_to_multus(self):
        v6 = self.macvlan_nad_conf("198.51.100.10/24")
        v6["ipam"]["addresses"].append({"address": "2001:db8:0:0::a/64"})
        v6["ipam"]["routes"] = [{"dst": "100.64.0.0/16", "gw": "198.51.100.1"}]
        dns = self.macvlan_nad_conf("198.51.100.11/24")
        dns["dns"] = {"nameservers": ["198.51.100.53"], "domain": "example.test",
                              "search": ["svc.example.test", "example.test"]}
        self.api.add_nad("default", "dual", v6)
        self.api.add_nad("net-ns", "with-dns", dns)
        self.add_pod({NETWORKS: "dual, net-ns/with-dns@dns0"})
        self.write_k8s(delegates=[self.cluster_with_gateway()])
        self.assertOk(self.add())
        attachments = self.cached_attachments()
        self.assertEqual([(a["name"], a["ifname"]) for a in attachments],
                         [("cluster", "eth0"), ("default/dual", "net1"), ("net-ns/with-dns", "dns0")])
        entries = []
        for a in attachments:
            entries += multus_entries(json.loads(a["result"]), a["name"], a["ifname"] == "eth0")
        expected = multus_annotation(entries)
        actual = self.status_annotation()
        self.assertEqual(actual, expected)
        # And the content is what the pod really has.
        status = json.loads(actual)
        self.assertEqual([e["interface"] for e in status], ["eth0", "net1", "dns0"])
        self.assertEqual([e.get("default") for e in status], [True, None, None])
        for e in status:
            self.assertEqual(e["mac"], self.pod.mac(e["interface"]))
        self.assertEqual(status[0]["ips"], ["192.0.2.2"])
        self.assertEqual(status[0]["gateway"], ["192.0.2.1"])
        self.assertEqual(status[1]["ips"], ["198.51.100.10", "2001:db8::a"])
        self.assertNotIn("gateway", status[1], "no default route on net1")
        self.assertEqual(status[1]["dns"], {})
        self.assertEqual(status[2]["dns"], {"nameservers": ["198.51.100.53"], "domain": "example.test",
                                            "search": ["svc.example.test", "example.test"]})
        self.assertIn('[{\n    "name": "cluster",\n    "interface": "eth0",\n    "ips": [\n'
                      '        "192.0.2.2"\n    ],', actual)
        self.assertIn('\n    "dns": {}', actual)
        self.assertTrue(actual.endswith("\n}]"), actual[-20:])
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_gateway_of_a_default_route_without_gw_is_the_installed_one(self):
        # host-local's route {"dst": "0.0.0.0/0"} has no "gw": the plugin installs it through the
        # address's gateway. Multus writes "<nil>" here; manifold writes what the pod really uses.
        self.add_pod({})
        self.write_k8s()
        self.assertOk(self.add())
        status = json.loads(self.status_annotation())
        routes = self.pod.default_routes()
        self.assertEqual(len(routes), 1)
        self.assertEqual(status[0]["gateway"], [routes[0]["gateway"]])
        self.assertEqual(status[0]["gateway"], ["192.0.2.1"])
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_no_gateway_key_without_a_default_route(self):
        conf = self.cluster_conf()
        conf["ipam"]["routes"] = [{"dst": "100.64.0.0/16"}]
        self.add_pod({})
        self.write_k8s(delegates=[conf])
        self.assertOk(self.add())
        self.assertEqual(self.pod.default_routes(), [])
        status = json.loads(self.status_annotation())
        self.assertEqual(len(status), 1)
        self.assertNotIn("gateway", status[0])
        self.assertTrue(status[0]["default"])
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_not_written_for_pods_in_system_namespaces_which_still_get_events(self):
        self.add_pod({}, ns="infra")
        self.write_k8s(systemNamespaces=["infra"])
        self.assertOk(self.add(ns="infra"))
        self.assertEqual([m for m, _ in api_paths(self.requests())], ["GET"])
        self.assertIsNone(self.status_annotation(ns="infra"))
        # As in Multus, only the status is skipped there: the pod still gets its events.
        self.assertEqual([ev["reason"] for ev in self.api.events()], ["AddedInterface"])
        self.assertOk(self.delete(ns="infra"))
        self.assertNothingLeft()

    def test_system_namespaces_are_matched_against_the_namespace_not_the_pod_name(self):
        # Multus compares the pod *name* with systemNamespaces (its issue #1205); we do not.
        self.add_pod({}, name="kube-system")
        self.write_k8s()
        self.assertOk(self.add(name="kube-system"))
        status = json.loads(self.status_annotation(name="kube-system"))
        self.assertEqual([e["name"] for e in status], ["cluster"])
        self.assertOk(self.delete(name="kube-system"))
        self.assertNothingLeft()
        self.assertIsNotNone(self.node.link(BRIDGE))


if __name__ == "__main__":
    main()
