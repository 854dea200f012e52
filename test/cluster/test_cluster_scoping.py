#!/usr/bin/env python3
"""Network scoping in a real pod, proven by traffic: a macvlan NAD on a host veth carries `mesh`
(inbound redirect to the proxy port 4143) and `sourceRouting`; the pod serves "proxy" on 4143 and
"app" on 8080 (busybox httpd). From the node, with a source address outside net1's subnet:

- a TCP connection to the pod's net1 address, port 8080, reaches the proxy port (the answer is
  "proxy"); one to its eth0 address, port 8080, does not (the answer is "app");
- the reply to the net1 connection leaves the pod by net1, through net1's gateway (net1's transmit
  counter grows by the whole answer, eth0's does not), although the pod's main table routes that
  source through eth0: only the source rule sends it by net1;
- a connection the pod opens through net1 reaches its outbound proxy port (4140);
- network-status carries the mesh's ports, the pod has the `from <net1 address>` rule;
and the pod's deletion leaves nothing on the node.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402

SUBNET, GATEWAY = "203.0.113.0/24", "203.0.113.1"
RANGE = ("203.0.113.40", "203.0.113.49")
CLIENT = "198.51.100.7"  # the node's source address: outside net1's subnet, routed by the gateway
PROXY_PORT, OUTBOUND_PORT, APP_PORT = 4143, 4140, 8080
ANSWER_SIZE = 512 * 1024
RULE_PRIORITY = 30000
# Three httpd's: the proxy's inbound port answers "proxy" (and a large file), its outbound port
# "outbound", the application's port "app".
SERVER = ["/bin/sh", "-c",
          "for d in proxy outbound app; do mkdir -p /srv/$d; echo $d > /srv/$d/who; done;"
          " dd if=/dev/zero of=/srv/proxy/big bs=1024 count=%d 2>/dev/null;"
          " httpd -p %d -h /srv/proxy; httpd -p %d -h /srv/outbound; httpd -p %d -h /srv/app;"
          " trap 'exit 0' TERM; sleep 86400 & wait"
          % (ANSWER_SIZE // 1024, PROXY_PORT, OUTBOUND_PORT, APP_PORT)]


def http_get(address, port, path):
    """A shell command sending an HTTP/1.0 GET with busybox nc (the static busybox's wget does not
    run outside its own root filesystem)."""
    return "printf 'GET /%s HTTP/1.0\\r\\n\\r\\n' | busybox nc -w 10 %s %d" % (path, address, port)


def answer_body(proc):
    """The body of a 200 answer that http_get's command printed (read as text: the header's CRLFs
    are newlines), or None."""
    head, _, body = proc.stdout.partition("\n\n")
    if proc.returncode != 0 or not head.startswith("HTTP/1.") or head.split()[1] != "200":
        return None
    return body


class MeshAndSourceRouting(ClusterTestCase):
    """A meshed, source-routed network in a real pod."""

    def node_run(self, *argv, check=True):
        return self.cluster.node.run(list(argv), mount=False, check=check)

    def fetch(self, address, path):
        """The body of GET http://address:8080/path from the node, or None if it fails."""
        return answer_body(self.node_run("sh", "-c", http_get(address, APP_PORT, path),
                                         check=False))

    def tx_bytes(self, pod, ifname):
        out = self.cluster.exec(self.namespace, pod, "cat",
                                "/sys/class/net/%s/statistics/tx_bytes" % ifname).stdout
        return int(out.strip())

    def test_redirect_on_net1_only_and_replies_by_net1(self):
        master = self.host_veth()
        peer = master + "p"
        self.nad("meshed", {"cniVersion": "1.0.0", "name": "mesh-" + self.namespace,
                            "type": "macvlan", "master": master, "mode": "bridge",
                            "ipam": {"type": "host-local", "ranges": [[{
                                "subnet": SUBNET, "gateway": GATEWAY, "rangeStart": RANGE[0],
                                "rangeEnd": RANGE[1]}]]},
                            "mesh": {"enabled": True, "inboundPort": PROXY_PORT,
                                     "outboundPort": OUTBOUND_PORT},
                            "sourceRouting": {"enabled": True}})
        # The node's side of net1: the gateway's address, and the client's address, which the
        # node uses as its source towards the pod's net1 address.
        self.node_run("ip", "addr", "add", GATEWAY + "/24", "dev", peer)
        self.node_run("ip", "addr", "add", CLIENT + "/32", "dev", peer)
        pod = self.create_pod("server", networks="meshed", command=SERVER)
        status = self.cluster.network_status(self.namespace, pod)
        self.assertEqual([(s["name"], s["interface"]) for s in status],
                         [(layout.CLUSTER_NETWORK, "eth0"), (self.namespace + "/meshed", "net1")])
        self.assertEqual(status[1].get("manifold.io/mesh"), {"inboundPort": PROXY_PORT, "outboundPort": OUTBOUND_PORT}, status)
        self.assertNotIn("manifold.io/mesh", status[0])
        net1 = status[1]["ips"][0]
        eth0 = status[0]["ips"][0]
        self.node_run("ip", "route", "add", net1 + "/32", "dev", peer, "src", CLIENT)

        # The source rule of net1's address, in the pod's namespace; its main table sends the
        # client's address through eth0 (the cluster's default route).
        rules = self.cluster.exec(self.namespace, pod, "ip", "rule").stdout
        self.assertRegex(rules, r"(?m)^%d:\s+from %s lookup \d+" % (RULE_PRIORITY, re.escape(net1)))
        main_route = self.cluster.exec(self.namespace, pod, "ip", "route", "get", CLIENT).stdout
        self.assertIn("dev eth0", main_route)

        self.cluster.wait("the pod's servers", lambda: self.fetch(eth0, "who") == "app\n")
        self.assertEqual(self.fetch(net1, "who"), "proxy\n", "net1:8080 must reach the proxy port")
        self.assertEqual(self.fetch(eth0, "who"), "app\n", "eth0:8080 must not be redirected")

        # A connection the pod opens through net1 reaches its outbound proxy port (nothing on the
        # node listens on the gateway's port 8080).
        out = self.cluster.exec(self.namespace, pod, "sh", "-c", http_get(GATEWAY, APP_PORT, "who"),
                                check=False)
        self.assertEqual(answer_body(out), "outbound\n", out.stdout + out.stderr)

        before = {ifname: self.tx_bytes(pod, ifname) for ifname in ("eth0", "net1")}
        answer = self.fetch(net1, "big")
        self.assertEqual(len(answer or ""), ANSWER_SIZE, "the proxy's large answer through net1")
        sent = {ifname: self.tx_bytes(pod, ifname) - before[ifname] for ifname in before}
        self.assertGreaterEqual(sent["net1"], ANSWER_SIZE, sent)
        self.assertLess(sent["eth0"], ANSWER_SIZE // 8, sent)

        self.delete_pod(pod)
        self.assertNodeSettles(what="after the pod's deletion, the node")


if __name__ == "__main__":
    main()
