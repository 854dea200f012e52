"""Shared implementation of the fake CNI delegate plugins used by the integration tests.

Each executable in this directory (fake-fail, fake-garbage, fake-hang, fake-record) is a thin
wrapper that calls main() with its behaviour. The plugins speak enough of the CNI protocol to be
driven by manifold: they answer VERSION with every spec version, record every call they receive
(when the config names a "recordFile") so tests can assert which delegate ran with which verb,
interface and config, and then misbehave in the way their name says. Config keys they read:
  recordFile  path of a JSON-lines file each call is appended to
  failOn      list of verbs fake-fail fails on (default ["ADD"])
  failCode    CNI error code fake-fail returns (default 11)
  failMsg     message fake-fail returns
  failWhile   fail (on failOn verbs) only while this path exists (a delegate whose DEL fails
              until the test lets it succeed); fake-record, too, fails on failOn verbs when the
              config names them, leaving its interface in place
  pidFile     fake-hang writes its pid here before hanging on ADD
  hangSeconds how long fake-hang hangs (default 120, then it exits 0 without a result)
  address     fake-record: IPv4 CIDR reported (and set on its link) on ADD
  exitCode    fake-garbage: exit status after printing its garbage (default 0)
  hangOn      list of verbs fake-hang hangs on (default ["ADD"]); other ADDs return a result
  crash       fake-record: "before-link" or "after-link" — SIGKILLs itself during ADD, before or
              after creating its interface (a delegate dying mid-ADD); "caller" — SIGKILLs the
              process that ran it (manifold) once its interface exists, as a runtime's timeout or
              the OOM killer would, then answers as usual (to nobody); "caller-del" — the same
              during DEL, before it deletes its interface
  afterAdd    fake-record: a shell command run after its interface exists, before it answers
              (fault injection on the node: fill or remount a directory...)
  resultVersion  fake-record: the cniVersion written into its ADD result instead of the config's

Verbs a fake does not fail on succeed; a non-failing ADD of fake-fail passes its prevResult through
(like a chained plugin) or returns a minimal result naming CNI_IFNAME.
fake-record really creates its interface (a dummy link, or ifb where the kernel lacks dummy) in
the namespace on ADD, deletes it on DEL and checks it on CHECK, so manifold's own interface checks
see a real link.
"""
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]


def _read_stdin():
    raw = sys.stdin.buffer.read()
    try:
        conf = json.loads(raw) if raw.strip() else {}
    except ValueError:
        conf = {}
    return raw, conf if isinstance(conf, dict) else {}


def _record(conf, raw):
    path = conf.get("recordFile")
    if not path:
        return
    entry = {
        "plugin": os.path.basename(sys.argv[0]),
        "command": os.environ.get("CNI_COMMAND", ""),
        "containerID": os.environ.get("CNI_CONTAINERID", ""),
        "ifname": os.environ.get("CNI_IFNAME", ""),
        "netns": os.environ.get("CNI_NETNS", ""),
        "args": os.environ.get("CNI_ARGS", ""),
        "pid": os.getpid(),
        "config": conf,
        "stdin": raw.decode("utf-8", "replace"),
    }
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(entry) + "\n")


def _error(conf, code, msg, details=""):
    out = {"cniVersion": conf.get("cniVersion", "1.0.0"), "code": code, "msg": msg}
    if details:
        out["details"] = details
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()
    sys.exit(1)


def _nsenter(netns, *cmd):
    return subprocess.run(["nsenter", "--net=" + netns, *cmd], capture_output=True, text=True)


def _result(conf, ifname, netns, mac, address):
    version = conf.get("cniVersion", "1.0.0")
    if version in ("0.1.0", "0.2.0"):
        return {"cniVersion": version, "ip4": {"ip": address}} if address else {"cniVersion": version}
    iface = {"name": ifname, "sandbox": netns}
    if mac:
        iface["mac"] = mac
    res = {"cniVersion": version, "interfaces": [iface], "ips": [], "dns": {}}
    if address:
        ip = {"address": address, "interface": 0}
        if version in ("0.3.0", "0.3.1", "0.4.0"):
            ip["version"] = "4"
        res["ips"].append(ip)
    return res


def _crash():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _record_add(conf):
    ifname = os.environ.get("CNI_IFNAME", "")
    netns = os.environ.get("CNI_NETNS", "")
    address = conf.get("address", "")
    if conf.get("crash") == "before-link":
        _crash()
    made = _nsenter(netns, "ip", "link", "add", ifname, "type", "dummy")
    if made.returncode != 0:  # kernels built without the dummy driver: ifb is as inert
        made = _nsenter(netns, "ip", "link", "add", ifname, "type", "ifb")
    if made.returncode != 0:
        _error(conf, 999, "fake-record: cannot create %s in %s" % (ifname, netns), made.stderr.strip())
    _nsenter(netns, "ip", "link", "set", ifname, "up")
    if address:
        _nsenter(netns, "ip", "addr", "add", address, "dev", ifname)
    link = json.loads(_nsenter(netns, "ip", "-j", "link", "show", ifname).stdout or "[{}]")
    mac = link[0].get("address", "") if link else ""
    if conf.get("afterAdd"):
        subprocess.run(["sh", "-c", conf["afterAdd"]], stdout=subprocess.DEVNULL, check=False)
    if conf.get("crash") == "after-link":
        _crash()
    if conf.get("crash") == "caller":
        os.kill(os.getppid(), signal.SIGKILL)
    result = _result(conf, ifname, netns, mac, address)
    if conf.get("resultVersion"):
        result["cniVersion"] = conf["resultVersion"]
    try:
        sys.stdout.write(json.dumps(result))
        sys.stdout.flush()
    except BrokenPipeError:  # crash "caller": nobody reads the answer
        sys.stdout = None


def _record_del(conf):
    if conf.get("crash") == "caller-del":
        os.kill(os.getppid(), signal.SIGKILL)
    netns = os.environ.get("CNI_NETNS", "")
    ifname = os.environ.get("CNI_IFNAME", "")
    if netns and os.path.exists(netns):
        _nsenter(netns, "ip", "link", "del", ifname)


def _record_check(conf):
    netns = os.environ.get("CNI_NETNS", "")
    ifname = os.environ.get("CNI_IFNAME", "")
    if _nsenter(netns, "ip", "link", "show", ifname).returncode != 0:
        _error(conf, 999, "fake-record: %s is missing in %s" % (ifname, netns))


def _hang(conf):
    pid_file = conf.get("pidFile")
    if pid_file:
        with open(pid_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
    time.sleep(float(conf.get("hangSeconds", 120)))  # bounded: never outlives a test run


def main(behaviour):
    """Runs one CNI call; behaviour is one of fail, garbage, hang, record."""
    command = os.environ.get("CNI_COMMAND", "")
    raw, conf = _read_stdin()
    if command == "VERSION":
        sys.stdout.write(json.dumps({"cniVersion": conf.get("cniVersion", "1.1.0"),
                                     "supportedVersions": ALL_VERSIONS}))
        return 0
    _record(conf, raw)
    if (behaviour == "fail" or "failOn" in conf) and command in conf.get("failOn", ["ADD"]) and (
            not conf.get("failWhile") or os.path.exists(conf["failWhile"])):
        _error(conf, int(conf.get("failCode", 11)),
               conf.get("failMsg", "fake-fail: %s refused on purpose" % command))
    if behaviour == "hang" and command != "ADD" and command in conf.get("hangOn", ["ADD"]):
        _hang(conf)
    if command != "ADD":
        if behaviour == "record" and command == "DEL":
            _record_del(conf)
        elif behaviour == "record" and command == "CHECK":
            _record_check(conf)
        return 0
    if behaviour == "garbage":
        sys.stdout.write("this is not a CNI result {\"cniVersion\": ")
        return int(conf.get("exitCode", 0))
    if behaviour == "hang" and command in conf.get("hangOn", ["ADD"]):
        _hang(conf)
        return 0
    if behaviour == "record":
        _record_add(conf)
        return 0
    if isinstance(conf.get("prevResult"), dict):  # a pass-through link of a chain
        prev = dict(conf["prevResult"])
        prev["cniVersion"] = conf.get("cniVersion", prev.get("cniVersion", "1.0.0"))
        sys.stdout.write(json.dumps(prev))
        return 0
    sys.stdout.write(json.dumps(_result(conf, os.environ.get("CNI_IFNAME", ""),
                                        os.environ.get("CNI_NETNS", ""), "", "")))
    return 0
