"""Per-test temporary directories and the state files the tests inspect.

A TempTree holds everything a test writes outside its namespaces: the NETCONFPATH directory, the
manifold cache (cniDir), the libcni cache of the driver, the host-local data dir of the delegates,
the CNI_PATH directory with a `manifold` symlink, manifold's log file and the fake plugins' record
file. It is removed when the test ends.
"""
import ipaddress
import json
import os
import shutil
import tempfile

FAKE_PLUGIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins")
SYSTEM_PLUGIN_DIR = "/usr/lib/cni"


class TempTree:
    """The temporary directory tree of one test."""

    def __init__(self, manifold_bin):
        self.manifold_bin = os.path.abspath(manifold_bin)
        self.root = None

    def __enter__(self):
        self.root = tempfile.mkdtemp(prefix="mf-it-")
        self.conf_dir = self._mkdir("conf")
        self.cni_dir = os.path.join(self.root, "cache")
        self.libcni_cache = self._mkdir("libcni-cache")
        self.ipam_dir = self._mkdir("ipam")
        self.bin_dir = self._mkdir("bin")
        self.log_file = os.path.join(self.root, "manifold.log")
        self.record_file = os.path.join(self.root, "records.jsonl")
        os.symlink(self.manifold_bin, os.path.join(self.bin_dir, "manifold"))
        return self

    def __exit__(self, *exc):
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
        return False

    def _mkdir(self, name):
        path = os.path.join(self.root, name)
        os.makedirs(path)
        return path

    def path(self, name):
        """A path inside the tree (not created)."""
        return os.path.join(self.root, name)

    def cni_path(self):
        """CNI_PATH for the tests: our manifold symlink, the system plugins, the fake plugins."""
        return ":".join([self.bin_dir, SYSTEM_PLUGIN_DIR, FAKE_PLUGIN_DIR])

    def write_conf(self, conf, filename="00-manifold.conf"):
        """Writes conf (a dict, or str/bytes verbatim) into NETCONFPATH, replacing other files."""
        for old in os.listdir(self.conf_dir):
            os.unlink(os.path.join(self.conf_dir, old))
        data = conf if isinstance(conf, (str, bytes)) else json.dumps(conf, indent=2)
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(os.path.join(self.conf_dir, filename), mode) as f:
            f.write(data)
        return os.path.join(self.conf_dir, filename)

    def add_conf(self, conf, filename):
        """Writes one more network config into NETCONFPATH, keeping the others; returns its path."""
        path = os.path.join(self.conf_dir, filename)
        with open(path, "w") as f:
            json.dump(conf, f, indent=2)
        return path

    def cache_entry_path(self, container, network="manifold-net", ifname="eth0"):
        """The path of manifold's cache entry of (container, network, CNI_IFNAME)."""
        encoded = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "%%%02X" % ord(c)
                          for c in network)
        return os.path.join(self.cni_dir, container, "%s@%s.json" % (encoded, ifname))

    def reservations(self):
        """host-local reservation files (named after an IP) under the IPAM data dir."""
        return reservations(self.ipam_dir)

    def cache_files(self):
        """manifold's cache files under cniDir (lock files and stored TLS sessions excluded: a TLS
        session belongs to the node's API server identity, not to a container)."""
        return [f for f in cache_files(self.cni_dir) if not f.startswith(TLS_SESSION_DIR + "/")]

    def tls_session_files(self):
        """The TLS sessions manifold stored under cniDir (one per API server identity)."""
        return [f for f in cache_files(self.cni_dir) if f.startswith(TLS_SESSION_DIR + "/")]

    def libcni_cache_files(self):
        """The driver's (libcni's) cached results."""
        return cache_files(self.libcni_cache)

    def records(self):
        """The calls recorded by the fake plugins, in order."""
        return read_records(self.record_file)

    def clear_records(self):
        """Forgets the calls recorded so far."""
        open(self.record_file, "w").close()

    def log_tail(self, limit=8000):
        """The end of manifold's log file, for failure messages."""
        try:
            with open(self.log_file, encoding="utf-8", errors="replace") as f:
                data = f.read()
        except FileNotFoundError:
            return "(no manifold log at %s)" % self.log_file
        return data[-limit:]


def _is_ip(name):
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def reservations(ipam_dir):
    """Relative paths of host-local reservation files (file name is an IP address)."""
    out = []
    for dirpath, _, files in os.walk(ipam_dir):
        for name in files:
            if _is_ip(name):
                out.append(os.path.relpath(os.path.join(dirpath, name), ipam_dir))
    return sorted(out)


TLS_SESSION_DIR = ".tls"


def is_lock_file(name):
    """Lock files are not cache entries: *.lock or a file named lock."""
    return name == "lock" or name.endswith(".lock")


def container_files(cni_dir):
    """Relative paths of every regular file under cniDir (lock files included) but the node's stored
    TLS session (`.tls`: it belongs to the API server identity, not to a container)."""
    out = []
    for dirpath, dirs, files in os.walk(cni_dir):
        if dirpath == cni_dir:
            dirs[:] = [d for d in dirs if d != TLS_SESSION_DIR]
        out += [os.path.relpath(os.path.join(dirpath, name), cni_dir) for name in files]
    return sorted(out)


def cache_files(directory):
    """Relative paths of the regular files under directory, lock files excluded."""
    out = []
    if not os.path.isdir(directory):
        return out
    for dirpath, _, files in os.walk(directory):
        for name in files:
            if not is_lock_file(name):
                out.append(os.path.relpath(os.path.join(dirpath, name), directory))
    return sorted(out)


def read_records(path):
    """Parses a JSON-lines record file; an absent file means no calls."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
