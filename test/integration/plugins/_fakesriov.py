"""The fake-sriov delegate: a CNI plugin that behaves like sriov-cni on links of the test's node.

sriov-cni moves the VF named by the deviceID that Multus (here: manifold) injects into its config
into the pod's namespace. fake-sriov does the same with an ordinary link: on ADD it reads the
top-level "deviceID" (else runtimeConfig.deviceID), maps it through "deviceLinks" to a link name
(by default the ID is the link's name), moves that link from the namespace the plugin runs in
(the test's "node" namespace) into CNI_NETNS renamed to CNI_IFNAME, sets it up, optionally adds
"address" to it, and answers a CNI result of the config's cniVersion. It saves what it did in a
state file keyed by container ID and interface name, so DEL moves the link back under its
original name; DEL is idempotent (no state, no netns, no link: success). CHECK verifies the link
is in CNI_NETNS. VERSION answers every spec version; GC and STATUS succeed.

Config keys:
  deviceID / runtimeConfig.deviceID  which device to move (missing: error 7 "deviceID missing")
  deviceLinks   map from a deviceID (e.g. a PCI address) to the host link's name
  address       IPv4 CIDR set on the moved link and reported in the result
  stateDir      where state files go (default /tmp): fake-sriov-<containerID>-<ifname>.json
  recordFile    JSON-lines file each call is appended to, in fake-record's shape (see
                _fakecni.py) plus, when runtimeConfig.CNIDeviceInfoFile is set, a field
                deviceInfoAt<Verb> (deviceInfoAtAdd on ADD): {path, exists, content, mode} of
                that file when the call started
Errors: 7 deviceID missing, 11 no such link in the node namespace, 999 anything else (a move that
fails, a link missing on CHECK). Links are moved with iproute2: `ip link set dev X netns <path>
name <ifname>` (a path with a "/" is opened as the namespace: /var/run/netns/<name> and
/proc/<pid>/ns/net both work), and back from inside the pod namespace (`nsenter --net=<netns>`)
with `netns <the plugin's own pid>`, whose namespace is the node's.
"""
import fcntl
import json
import os
import subprocess
import sys

import _fakecni

DEFAULT_STATE_DIR = "/tmp"


def _env():
    return {key: os.environ.get("CNI_" + key.upper(), "")
            for key in ("command", "containerID", "ifname", "netns", "args")}


def _device_info(conf):
    """What the CNIDeviceInfoFile of runtimeConfig holds right now, or None without one."""
    runtime = conf.get("runtimeConfig") if isinstance(conf.get("runtimeConfig"), dict) else {}
    path = runtime.get("CNIDeviceInfoFile")
    if not isinstance(path, str) or not path:
        return None
    info = {"path": path, "exists": os.path.exists(path), "content": None, "mode": None}
    if info["exists"]:
        with open(path, encoding="utf-8", errors="replace") as f:
            info["content"] = f.read()
        info["mode"] = "%04o" % (os.stat(path).st_mode & 0o7777)
    return info


def _record(conf, raw, env):
    """Appends the call to recordFile: fake-record's fields plus deviceInfoAt<Verb>."""
    path = conf.get("recordFile")
    if not path:
        return
    entry = {
        "plugin": os.path.basename(sys.argv[0]),
        "command": env["command"],
        "containerID": env["containerID"],
        "ifname": env["ifname"],
        "netns": env["netns"],
        "args": env["args"],
        "pid": os.getpid(),
        "config": conf,
        "stdin": raw.decode("utf-8", "replace"),
    }
    info = _device_info(conf)
    if info is not None:
        entry["deviceInfoAt" + env["command"].capitalize()] = info
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(entry) + "\n")


def _device_id(conf):
    device_id = conf.get("deviceID")
    if not device_id and isinstance(conf.get("runtimeConfig"), dict):
        device_id = conf["runtimeConfig"].get("deviceID")
    return device_id if isinstance(device_id, str) and device_id else None


def _ip(*args, netns=None):
    cmd = ["ip", *args] if netns is None else ["nsenter", "--net=" + netns, "ip", *args]
    return subprocess.run(cmd, capture_output=True, text=True)


def _link(name, netns=None):
    """The `ip -j link show` entry of name (in netns, else here), or None."""
    proc = _ip("-j", "link", "show", "dev", name, netns=netns)
    if proc.returncode != 0:
        return None
    links = json.loads(proc.stdout or "[]")
    return links[0] if links else None


def _state_path(conf, env):
    key = "%s-%s" % (env["containerID"], env["ifname"])
    return os.path.join(conf.get("stateDir") or DEFAULT_STATE_DIR,
                        "fake-sriov-%s.json" % key.replace("/", "_"))


def _save_state(path, state):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.rename(path + ".tmp", path)


def _load_state(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def _must(conf, proc, what):
    if proc.returncode != 0:
        _fakecni._error(conf, 999, "fake-sriov: " + what, proc.stderr.strip())


def _add(conf, env):
    device_id = _device_id(conf)
    if device_id is None:
        _fakecni._error(conf, 7, "deviceID missing",
                        "fake-sriov: no deviceID in the config nor in runtimeConfig")
    links = conf.get("deviceLinks") if isinstance(conf.get("deviceLinks"), dict) else {}
    host_name = links.get(device_id, device_id)
    if _link(host_name) is None:
        _fakecni._error(conf, 11, "fake-sriov: no link %s (deviceID %s) in the node namespace"
                        % (host_name, device_id))
    netns, ifname = env["netns"], env["ifname"]
    _must(conf, _ip("link", "set", "dev", host_name, "netns", netns, "name", ifname),
          "cannot move %s into %s as %s" % (host_name, netns, ifname))
    link = _link(ifname, netns) or {}
    _save_state(_state_path(conf, env), {"deviceID": device_id, "hostName": host_name,
                                         "netns": netns, "ifname": ifname,
                                         "mac": link.get("address", "")})
    _must(conf, _ip("link", "set", "dev", ifname, "up", netns=netns), "cannot set %s up" % ifname)
    address = conf.get("address", "")
    if address:
        _must(conf, _ip("addr", "add", address, "dev", ifname, netns=netns),
              "cannot add %s to %s" % (address, ifname))
    result = _fakecni._result(conf, ifname, netns, link.get("address", ""), address)
    sys.stdout.write(json.dumps(result))


def _del(conf, env):
    path = _state_path(conf, env)
    state = _load_state(path)
    netns, ifname = env["netns"], env["ifname"]
    if state is not None and netns and os.path.exists(netns):
        link = _link(ifname, netns)
        if link is not None and link.get("address", "") == state.get("mac"):
            _ip("link", "set", "dev", ifname, "down", netns=netns)
            _must(conf, _ip("link", "set", "dev", ifname, "netns", str(os.getpid()),
                            "name", state["hostName"], netns=netns),
                  "cannot move %s back as %s" % (ifname, state["hostName"]))
    if os.path.lexists(path):
        os.unlink(path)


def _check(conf, env):
    netns, ifname = env["netns"], env["ifname"]
    if not netns or not os.path.exists(netns) or _link(ifname, netns) is None:
        _fakecni._error(conf, 999, "fake-sriov: %s is missing in %s" % (ifname, netns))


def main():
    """Runs one CNI call as fake-sriov; returns the exit status."""
    env = _env()
    raw, conf = _fakecni._read_stdin()
    if env["command"] == "VERSION":
        sys.stdout.write(json.dumps({"cniVersion": conf.get("cniVersion", "1.1.0"),
                                     "supportedVersions": _fakecni.ALL_VERSIONS}))
        return 0
    _record(conf, raw, env)
    verbs = {"ADD": _add, "DEL": _del, "CHECK": _check}
    if env["command"] in verbs:
        verbs[env["command"]](conf, env)
    return 0
