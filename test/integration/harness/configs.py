"""Builders for the network configurations the integration tests use (pure functions, plain dicts).

Addresses come from the documentation ranges so they can never be mistaken for a real network:
the cluster network (bridge + host-local) is 192.0.2.0/24, macvlan attachments use 198.51.100.0/24
and ipvlan attachments 203.0.113.0/24. Static routes point at 100.64/10 prefixes. Nothing is ever
sent to these addresses: they only exist inside the tests' own namespaces.
"""

CLUSTER_SUBNET = "192.0.2.0/24"
CLUSTER_GATEWAY = "192.0.2.1"
MACVLAN_GATEWAY = "198.51.100.1"
MACVLAN_ROUTE = "100.64.0.0/16"
IPVLAN_GATEWAY = "203.0.113.1"
IPVLAN_ROUTE = "100.65.0.0/16"
TUNED_MAC = "02:00:5e:10:00:2a"
MANIFOLD_NET = "manifold-net"

# CNI spec versions manifold supports, in order.
ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
# Debian's plugins (v1.1.1) speak up to 1.0.0.
MAX_DEBIAN_PLUGIN_VERSION = "1.0.0"


def delegate_version(manifold_version):
    """The highest version Debian's plugins accept that is not above manifold_version."""
    if manifold_version == "1.1.0":
        return MAX_DEBIAN_PLUGIN_VERSION
    return manifold_version


def bridge(version, data_dir, name="cluster", bridge_name="mfbr0", subnet=CLUSTER_SUBNET,
           gateway=CLUSTER_GATEWAY):
    """The cluster network: bridge + host-local (data dir in the test's tree), default route."""
    return {
        "cniVersion": version, "name": name, "type": "bridge", "bridge": bridge_name,
        "isGateway": True, "ipMasq": False, "hairpinMode": False,
        "ipam": {"type": "host-local", "subnet": subnet, "gateway": gateway,
                 "dataDir": data_dir, "routes": [{"dst": "0.0.0.0/0"}]},
    }


def macvlan(version, master, address, name="macnet", route=MACVLAN_ROUTE, gateway=MACVLAN_GATEWAY):
    """A macvlan attachment on master with a static address and one static route."""
    ipam = {"type": "static", "addresses": [{"address": address}]}
    if route:
        ipam["routes"] = [{"dst": route, "gw": gateway}]
    return {"cniVersion": version, "name": name, "type": "macvlan", "master": master,
            "mode": "bridge", "ipam": ipam}


def ipvlan(version, master, address, name="ipvnet", route=IPVLAN_ROUTE, gateway=IPVLAN_GATEWAY):
    """An ipvlan (l2) attachment on master with a static address and one static route."""
    ipam = {"type": "static", "addresses": [{"address": address}]}
    if route:
        ipam["routes"] = [{"dst": route, "gw": gateway}]
    return {"cniVersion": version, "name": name, "type": "ipvlan", "master": master,
            "mode": "l2", "ipam": ipam}


def macvlan_tuning_list(version, master, address, mac=TUNED_MAC, name="tunednet"):
    """A conflist: macvlan with a static address, then tuning setting the MAC address."""
    return {
        "cniVersion": version, "name": name,
        "plugins": [
            {"type": "macvlan", "master": master, "mode": "bridge",
             "ipam": {"type": "static", "addresses": [{"address": address}]}},
            {"type": "tuning", "mac": mac},
        ],
    }


def fake(plugin_type, version="1.0.0", name=None, **keys):
    """A fake delegate (see plugins/_fakecni.py); keys are its config (recordFile, failCode...)."""
    conf = {"cniVersion": version, "name": name or plugin_type, "type": plugin_type}
    conf.update(keys)
    return conf


def manifold(version, delegates, cni_dir, log_file, bin_dir="/nonexistent-manifold-bin",
             delegate_timeout=30, name=MANIFOLD_NET, **extra):
    """The manifold config under test; extra keys (returnAllResults, ...) are merged in."""
    conf = {
        "cniVersion": version, "name": name, "type": "manifold", "cniDir": cni_dir,
        "binDir": bin_dir, "logFile": log_file, "logLevel": "debug", "logToStderr": False,
        "delegateTimeout": delegate_timeout, "delegates": delegates,
    }
    conf.update(extra)
    return conf
