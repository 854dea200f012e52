#!/usr/bin/env python3
"""The static release binary works on a node that has none of the build's libraries.

The Release build with MANIFOLD_STATIC=ON (taken from MANIFOLD_STATIC_BIN, else built by
test/static-check.sh --build-only) must be a static ELF (no PT_INTERP, `ldd` says "not a dynamic
executable"). It is copied into a root filesystem that holds only that binary, Debian's `bridge`
and `host-local`, a minimal /etc and empty state directories: no library directory at all, so
none of libnl, OpenSSL, yaml-cpp, libstdc++, libgcc or glibc's shared objects and no NSS module.
/proc, /sys and /var/run/netns are bind-mounted in a private mount namespace (`unshare --mount`)
and the binary runs under `chroot`, inside a node namespace of ours so the bridge never touches
the host. There it answers VERSION, does ADD, CHECK and DEL through the bridge delegate on a pod
namespace created outside, and leaves nothing behind.

Debian builds its CNI plugins against glibc (they are not static Go binaries), so the delegates
bring their own runtime: their two shared objects (libc.so.6 and the loader, nothing else, as
`ldd` shows) go to /dl, the delegates' copies have their ELF interpreter rewritten to /dl/<loader>,
and LD_LIBRARY_PATH=/dl reaches them through manifold's environment. /dl is not a directory any
loader or dlopen searches by default; the static manifold never reads it.

Name resolution of the API server: with a kubeconfig naming `kubernetes.default.svc` (mapped in
the rootfs /etc/hosts) and `kubernetes.default.svc.cluster.local` (answered by a DNS responder of
ours named in the rootfs resolv.conf), the ADD reaches the API server double. A probe NSS module
listed in nsswitch.conf proves that manifold never loads NSS plugins (it pins lookups to glibc's
built-in files and dns services), while a plain static getaddrinfo program does load it.
"""
import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_HERE, "apiserver"))
sys.dont_write_bytecode = True

from harness import ci  # noqa: E402
from harness.netns import Netns, remove_stale_namespaces, run  # noqa: E402
from harness.static import expected_tls_build, static_binary  # noqa: E402
from harness.tree import container_files  # noqa: E402

SYSTEM_PLUGINS = "/usr/lib/cni"
DELEGATES = ("bridge", "host-local")
DELEGATE_RUNTIME = "/dl"
# What Debian's Go plugins may need besides the kernel: glibc's libc and loader, nothing more.
DELEGATE_SONAMES = {"libc.so.6", "ld-linux-x86-64.so.2"}
# Shared objects of the libraries manifold is built with: none may be in the rootfs.
BUILD_LIBRARY_PREFIXES = ("libnl", "libssl", "libcrypto", "libyaml-cpp", "libstdc++", "libgcc_s",
                          "libm.", "libpthread", "libdl", "libnss_")
# A regression guard on the static binary's size. The first performance round's budget was 8 MB;
# the device path (PodResources over nghttp2 + protobuf-c, DRA, device-info), which a drop-in for
# Multus needs, took the binary to 8,077,320 bytes. The target is 5 MB (the benchmark prints it and
# its verdict); this guard only stops growth beyond what the device path added. The node agent's
# API relay (its server and the CNI side's transport) added 41 KB: 8,245,416 bytes.
MAX_BINARY_BYTES = 8 * 1000 * 1000 + 400 * 1000
# With the TLS-client build of OpenSSL (lib/openssl.cmake), as CI and test/static-check.sh build it,
# the binary was 6,196,808 bytes (OpenSSL 3.0.20); the agent's hardening against a hostile peer (the
# relay's bounded frames and node scope, the socket trust check, the request ceiling, the sandbox
# namespace identity, parse errors worded for people) took it to 6,305,544; the node agent's lookup
# caches, its MultiNetworkPolicy sync (watched views, the compact peer store, CHECK's peer listing,
# paged lists) and reading Multus's cache for the DEL of the pods it attached, to 6,458,472. The
# guard leaves about 40 KB for growth.
MAX_TLS_CLIENT_BUILD_BYTES = 6 * 1000 * 1000 + 500 * 1000
# A string each library manifold links brings into the stripped binary's read-only data.
LIBRARY_MARKERS = {
    "libcrypto": b"CRYPTOGAMS by <appro@openssl.org>",
    "libssl": b"ECDHE-ECDSA-AES256-GCM-SHA384",  # its cipher suite table (no file names: no-filenames)
    "libnl": b"Unspecific failure",
    "yaml-cpp": b"yaml-cpp: error at line",
    "libstdc++": b"basic_string::_M_create",
}
BRIDGE_NAME = "mfsbr0"
CONTAINER = "static-proof"
HOSTS_NAME = "kubernetes.default.svc"
DNS_NAME = "kubernetes.default.svc.cluster.local"
PROBE_MARKER = "/nss-probe-loaded"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"

# The private mount namespace: bind the kernel file systems and the netns directory, then chroot.
_ENTER_SCRIPT = """set -e
root=$1; shift
mount --rbind /proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /var/run/netns "$root/var/run/netns"
exec chroot "$root" "$@"
"""

# An NSS module with no libc dependency: creating PROBE_MARKER when anything dlopens it.
_PROBE_SOURCE = r"""
static long sys3(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
__attribute__((constructor)) static void loaded(void) {
  long fd = sys3(2, (long)"%s", 0101, 0600);
  if (fd >= 0) sys3(3, fd, 0, 0);
}
""" % PROBE_MARKER

# A static program resolving a name with plain getaddrinfo (nsswitch.conf honoured): the positive
# control showing that the probe module does get loaded when nothing pins the lookup.
_CONTROL_SOURCE = r"""
#include <netdb.h>
#include <string.h>
int main(int argc, char **argv) {
  struct addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (argc < 2 || getaddrinfo(argv[1], "443", &hints, &res) != 0) return 1;
  freeaddrinfo(res);
  return 0;
}
"""


def elf_interpreter(path):
    """The PT_INTERP of a 64-bit little-endian ELF file, or None when it has none (static)."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            raise ValueError("%s is not a 64-bit little-endian ELF file" % path)
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, p_offset, _, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
            if p_type == 3:  # PT_INTERP
                f.seek(p_offset)
                return f.read(p_filesz).rstrip(b"\0").decode()
    return None


def has_symbol_table(path):
    """True when the ELF file has a SHT_SYMTAB section (it is not stripped)."""
    with open(path, "rb") as f:
        header = f.read(64)
        shoff, = struct.unpack_from("<Q", header, 40)
        shentsize, shnum = struct.unpack_from("<HH", header, 58)
        for i in range(shnum):
            f.seek(shoff + i * shentsize + 4)
            sh_type, = struct.unpack("<I", f.read(4))
            if sh_type == 2:
                return True
    return False


def rewrite_interpreter(path, interpreter):
    """Points the PT_INTERP of the ELF file at path to interpreter (in place, NUL-padded)."""
    with open(path, "r+b") as f:
        header = f.read(64)
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, p_offset, _, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
            if p_type == 3:
                new = interpreter.encode()
                if len(new) >= p_filesz:
                    raise ValueError("interpreter path %s does not fit in %s" % (interpreter, path))
                f.seek(p_offset)
                f.write(new + b"\0" * (p_filesz - len(new)))
                return
    raise ValueError("%s has no ELF interpreter" % path)


def shared_objects(path):
    """The shared objects ldd resolves for a dynamic executable: {soname: host path}."""
    out = {}
    for line in subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            out[parts[0]] = parts[2]
        elif parts and parts[0].startswith("/"):
            out[os.path.basename(parts[0])] = parts[0]
    return out


def ldd_says_static(path):
    """True when ldd prints "not a dynamic executable" for path."""
    proc = subprocess.run(["ldd", path], capture_output=True, text=True)
    return "not a dynamic executable" in proc.stdout + proc.stderr


class DnsResponder:
    """A UDP DNS server on 127.0.0.1:53 of the calling thread's network namespace answering one
    name with one IPv4 address (A) and every other question with an empty NOERROR answer."""

    def __init__(self, name, address):
        self.name = name.lower().rstrip(".")
        self.address = address
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @staticmethod
    def _qname(data):
        labels, i = [], 12
        while data[i] != 0:
            labels.append(data[i + 1:i + 1 + data[i]].decode("ascii", "replace"))
            i += 1 + data[i]
        return ".".join(labels).lower(), i + 5

    def _serve(self):
        while True:
            try:
                data, peer = self.sock.recvfrom(512)
            except OSError:
                return
            try:
                tid, = struct.unpack_from("!H", data)
                qname, qend = self._qname(data)
                qtype, = struct.unpack_from("!H", data, qend - 4)
            except (IndexError, struct.error):
                continue
            self.queries.append((qname, qtype))
            answers = b""
            if qname == self.name and qtype == 1:
                answers = (b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 30, 4) +
                           socket.inet_aton(self.address))
            header = struct.pack("!HHHHHH", tid, 0x8180, 1, 1 if answers else 0, 0, 0)
            self.sock.sendto(header + data[12:qend] + answers, peer)

    def close(self):
        self.sock.close()
        self.thread.join(timeout=5)


class InNetns:
    """Moves the calling thread (and the processes it starts) into a network namespace, and back."""

    def __init__(self, netns_path):
        self.path = netns_path
        self.own = None

    def __enter__(self):
        import ctypes
        import ctypes.util
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.own = open("/proc/thread-self/ns/net", "rb")
        with open(self.path, "rb") as target:
            self._setns(target.fileno())
        return self

    def _setns(self, fd):
        import ctypes
        if self._libc.setns(fd, 0x40000000) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "setns: " + os.strerror(err))

    def __exit__(self, *exc):
        self._setns(self.own.fileno())
        self.own.close()
        return False


class StaticRootfsTest(unittest.TestCase):
    """Every test builds its own rootfs, node and pod namespaces, and removes them at the end."""

    maxDiff = None
    binary = None

    @classmethod
    def setUpClass(cls):
        cls.binary = static_binary()
        print("static binary under test: %s (%d bytes)" % (cls.binary, os.path.getsize(cls.binary)),
              file=sys.stderr)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mf-static-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = os.path.join(self.tmp, "root")
        self.node = Netns()
        self.node.__enter__()
        self.addCleanup(self.node.delete)
        self.pod = Netns()
        self.pod.__enter__()
        self.addCleanup(self.pod.delete)
        self.build_rootfs()

    # ---- the root file system --------------------------------------------------------------------

    def build_rootfs(self, nsswitch="hosts: files dns\n"):
        for d in ("opt/cni/bin", "etc", "proc", "sys", "var/run/netns", "var/lib/cni/networks",
                  "var/log", "tmp"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        os.chmod(os.path.join(self.root, "tmp"), 0o1777)
        shutil.copy2(self.binary, os.path.join(self.root, "opt/cni/bin/manifold"))
        runtime = os.path.join(self.root, DELEGATE_RUNTIME.lstrip("/"))
        os.makedirs(runtime, exist_ok=True)
        for name in DELEGATES:
            source = os.path.join(SYSTEM_PLUGINS, name)
            target = os.path.join(self.root, "opt/cni/bin", name)
            shutil.copy2(source, target)
            interpreter = elf_interpreter(source)
            if interpreter is None:
                continue  # a static delegate needs nothing
            needs = shared_objects(source)
            self.assertLessEqual(set(needs) - {"linux-vdso.so.1"}, DELEGATE_SONAMES,
                                 "%s needs more than glibc: %s" % (name, needs))
            for soname, host_path in needs.items():
                if soname != "linux-vdso.so.1":
                    shutil.copy2(host_path, os.path.join(runtime, soname))
            rewrite_interpreter(target, DELEGATE_RUNTIME + "/" + os.path.basename(interpreter))
        self.write("etc/hosts", "127.0.0.1 localhost\n::1 localhost\n127.0.0.1 %s\n" % HOSTS_NAME)
        self.write("etc/nsswitch.conf", nsswitch)
        self.write("etc/resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")

    def write(self, rel, text, mode=0o644):
        path = os.path.join(self.root, rel)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def rootfs_files(self):
        """Every regular file of the rootfs, relative to it (mount points are empty directories)."""
        out = []
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                path = os.path.join(dirpath, name)
                if stat.S_ISREG(os.lstat(path).st_mode):
                    out.append(os.path.relpath(path, self.root))
        return sorted(out)

    def chroot_run(self, argv, env, stdin=b"", timeout=60):
        """Runs argv inside the chroot (private mount namespace, node network namespace)."""
        cmd = ["ip", "netns", "exec", self.node.name, "unshare", "--mount", "--propagation", "private",
               "--", "sh", "-c", _ENTER_SCRIPT, "sh", self.root] + argv
        proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **env})
        return proc

    def manifold(self, command, config, env=None, timeout=60):
        full = {"CNI_COMMAND": command, "CNI_CONTAINERID": CONTAINER,
                "CNI_NETNS": "/var/run/netns/" + self.pod.name, "CNI_IFNAME": "eth0",
                "CNI_PATH": "/opt/cni/bin", "LD_LIBRARY_PATH": DELEGATE_RUNTIME}
        full.update(env or {})
        proc = self.chroot_run(["/opt/cni/bin/manifold"], full, json.dumps(config).encode(), timeout)
        return proc

    def assertRan(self, proc, what):
        if proc.returncode != 0:
            log = ""
            try:
                with open(os.path.join(self.root, "var/log/manifold.log"), encoding="utf-8") as f:
                    log = f.read()[-6000:]
            except OSError:
                pass
            self.fail("%s failed (%d)\nstdout: %s\nstderr: %s\nlog:\n%s" % (
                what, proc.returncode, proc.stdout.decode(errors="replace"),
                proc.stderr.decode(errors="replace"), log))

    def config(self, **extra):
        conf = {
            "cniVersion": "1.0.0", "name": "static-net", "type": "manifold",
            "cniDir": "/var/lib/cni/manifold", "binDir": "/opt/cni/bin",
            "logFile": "/var/log/manifold.log", "logLevel": "debug", "logToStderr": False,
            "delegates": [{
                "cniVersion": "1.0.0", "name": "cluster", "type": "bridge", "bridge": BRIDGE_NAME,
                "isGateway": True, "ipMasq": False,
                "ipam": {"type": "host-local", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1",
                         "dataDir": "/var/lib/cni/networks", "routes": [{"dst": "0.0.0.0/0"}]}}],
        }
        conf.update(extra)
        return conf

    def reservations(self):
        out = []
        for dirpath, _, files in os.walk(os.path.join(self.root, "var/lib/cni/networks")):
            out += [f for f in files if f[:1].isdigit()]
        return sorted(out)

    def cache_entries(self):
        """Files under cniDir, the node's stored TLS session left out: not a container's."""
        return [os.path.join("var/lib/cni/manifold", f)
                for f in container_files(os.path.join(self.root, "var/lib/cni/manifold"))]

    def assertNothingLeft(self):
        self.assertEqual(self.pod.link_names(), ["lo"], "links left in the pod namespace")
        self.assertEqual(self.reservations(), [], "host-local reservations left")
        self.assertEqual(self.cache_entries(), [], "manifold cache files left")
        self.assertEqual([n for n in self.node.link_names() if n not in ("lo", BRIDGE_NAME)], [],
                         "veth ends left in the node namespace")
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            self.assertNotIn(self.root, f.read(), "a bind mount of the rootfs outlived its namespace")

    # ---- the tests --------------------------------------------------------------------------------

    def test_binary_is_static(self):
        self.assertIsNone(elf_interpreter(self.binary), "%s has an ELF interpreter" % self.binary)
        self.assertTrue(ldd_says_static(self.binary), "ldd does not call %s static" % self.binary)
        self.assertFalse(has_symbol_table(self.binary), "the release binary is not stripped")
        size = os.path.getsize(self.binary)
        budget = MAX_BINARY_BYTES if expected_tls_build() is None else MAX_TLS_CLIENT_BUILD_BYTES
        self.assertLessEqual(size, budget, "%s is %d bytes, over the %d byte budget" % (
            self.binary, size, budget))

    def test_libraries_are_linked_in(self):
        with open(self.binary, "rb") as f:
            image = f.read()
        for library, marker in LIBRARY_MARKERS.items():
            self.assertIn(marker, image, "%s is not linked into %s" % (library, self.binary))

    def test_link_line_is_static_stripped_gc_sections_and_ordered(self):
        build_dir = os.path.dirname(self.binary)
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            ci.skip_or_fail(self, "%s is not in a Ninja build directory" % self.binary)
        proc = subprocess.run(["ninja", "-C", build_dir, "-t", "commands", "manifold"],
                              capture_output=True, text=True, check=True)
        link = proc.stdout.strip().splitlines()[-1].split()
        for flag in ("-static", "-Wl,--gc-sections", "-s", "-fuse-ld=lld"):
            self.assertIn(flag, link, "the link line of %s lacks %s" % (self.binary, flag))
        # The code of a CNI call laid out together (CMakeLists.txt): lld with the order file.
        order = [f.split("=", 1)[1] for f in link if f.startswith("-Wl,--symbol-ordering-file=")]
        self.assertEqual(len(order), 1, "the link line of %s orders no symbols" % self.binary)
        with open(order[0], encoding="utf-8") as f:
            names = [line for line in f.read().splitlines() if line and not line.startswith("#")]
        self.assertIn("main", names)
        self.assertGreater(len(names), 1000, "%s lists too few functions" % order[0])

    def test_rootfs_holds_no_library_manifold_could_use(self):
        files = self.rootfs_files()
        runtime = DELEGATE_RUNTIME.lstrip("/") + "/"
        self.assertEqual([f for f in files if not f.startswith(runtime)],
                         ["etc/hosts", "etc/nsswitch.conf", "etc/resolv.conf",
                          "opt/cni/bin/bridge", "opt/cni/bin/host-local", "opt/cni/bin/manifold"])
        self.assertLessEqual({f[len(runtime):] for f in files if f.startswith(runtime)}, DELEGATE_SONAMES)
        for f in files:
            self.assertFalse(os.path.basename(f).startswith(BUILD_LIBRARY_PREFIXES), f)
        for d in ("lib", "lib64", "usr", "lib32", "libx32"):
            self.assertFalse(os.path.exists(os.path.join(self.root, d)), "/%s exists in the rootfs" % d)

    def test_version_in_empty_rootfs(self):
        proc = self.chroot_run(["/opt/cni/bin/manifold"], {"CNI_COMMAND": "VERSION"},
                               b'{"cniVersion":"1.0.0"}')
        self.assertRan(proc, "VERSION")
        info = json.loads(proc.stdout)
        self.assertEqual(info["cniVersion"], "1.0.0")
        self.assertIn("1.1.0", info["supportedVersions"])
        self.assertIn("0.1.0", info["supportedVersions"])
        human = self.chroot_run(["/opt/cni/bin/manifold", "version"], {})
        self.assertRan(human, "manifold version")
        self.assertIn("static", human.stdout.decode())
        expected = expected_tls_build()
        if expected is not None:
            self.assertIn("(%s)\n" % expected, human.stdout.decode())

    def test_add_check_del_through_bridge(self):
        conf = self.config()
        add = self.manifold("ADD", conf)
        self.assertRan(add, "ADD")
        result = json.loads(add.stdout)
        self.assertEqual(result["cniVersion"], "1.0.0")
        ifaces = [i for i in result["interfaces"] if i.get("sandbox")]
        self.assertEqual([i["name"] for i in ifaces], ["eth0"])
        self.assertEqual(self.pod.link_names(), ["eth0", "lo"])
        address = result["ips"][0]["address"]
        self.assertTrue(address.startswith("192.0.2."), result)
        self.assertEqual(self.pod.addresses("eth0"), [address])
        self.assertIn(BRIDGE_NAME, self.node.link_names())
        self.assertEqual(self.reservations(), [address.split("/")[0]])
        self.assertNotEqual(self.cache_entries(), [])

        self.assertRan(self.manifold("CHECK", conf), "CHECK")
        self.assertRan(self.manifold("DEL", conf), "DEL")
        self.assertNothingLeft()
        self.assertRan(self.manifold("DEL", conf), "second DEL")
        self.assertNothingLeft()

    def _kube_add(self, server_name, expect_queries):
        """ADD through the bridge with the pod looked up at https://<server_name>:<port>."""
        from apiserver_double import ApiServerDouble
        with InNetns(self.node.path):
            self.node.ip("link", "set", "lo", "up")
            dns = DnsResponder(DNS_NAME, "127.0.0.1")
            try:
                with ApiServerDouble(ipv6=False) as api:
                    api.add_pod("default", "web", uid="uid-static")
                    kubeconfig = os.path.join(self.root, "etc/manifold.kubeconfig")
                    api.write_kubeconfig(kubeconfig, auth="token", ca="data",
                                         server="https://%s:%d" % (server_name, api.port))
                    conf = self.config(kubeconfig="/etc/manifold.kubeconfig")
                    args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;" \
                           "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=uid-static" % CONTAINER
                    add = self.manifold("ADD", conf, {"CNI_ARGS": args})
                    self.assertRan(add, "ADD with Kubernetes at " + server_name)
                    gets = api.requests(method="GET", path=r"/pods/web$")
                    self.assertEqual(len(gets), 1, api.requests())
                    status = api.get_pod("default", "web")["metadata"]["annotations"][STATUS_ANNOTATION]
                    self.assertEqual(json.loads(status)[0]["name"], "cluster")
                    self.assertRan(self.manifold("DEL", conf, {"CNI_ARGS": args}), "DEL")
            finally:
                dns.close()
        self.assertEqual(bool(dns.queries), expect_queries, dns.queries)
        self.assertNothingLeft()

    def test_api_server_name_from_etc_hosts(self):
        self._kube_add(HOSTS_NAME, expect_queries=False)

    def test_api_server_name_from_dns(self):
        self._kube_add(DNS_NAME, expect_queries=True)

    def test_nss_modules_are_never_loaded(self):
        source = os.path.join(self.tmp, "probe.c")
        module = os.path.join(self.tmp, "libnss_mfprobe.so.2")
        with open(source, "w", encoding="utf-8") as f:
            f.write(_PROBE_SOURCE)
        run(["cc", "-shared", "-fPIC", "-nostdlib", "-O2", "-o", module, source])
        # Every directory glibc searches for NSS modules.
        for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
            shutil.copy2(module, os.path.join(self.root, d))
        self.write("etc/nsswitch.conf", "hosts: mfprobe [NOTFOUND=return] files dns\n")
        marker = os.path.join(self.root, PROBE_MARKER.lstrip("/"))
        # Positive control: an unpinned static getaddrinfo loads the probe.
        control = os.path.join(self.tmp, "control.c")
        with open(control, "w", encoding="utf-8") as f:
            f.write(_CONTROL_SOURCE)
        run(["cc", "-static", "-O2", "-o", os.path.join(self.root, "tmp/control"), control])
        self.assertEqual(self.chroot_run(["/tmp/control", HOSTS_NAME], {}).returncode, 0)
        self.assertTrue(os.path.exists(marker), "the probe NSS module was not loaded by the control")
        os.unlink(marker)
        os.unlink(os.path.join(self.root, "tmp/control"))
        self._kube_add(HOSTS_NAME, expect_queries=False)
        self.assertFalse(os.path.exists(marker), "manifold loaded an NSS module named in nsswitch.conf")


def main():
    if os.geteuid() != 0:
        ci.cannot_run("the static rootfs test needs root (chroot, mount and network namespaces)")
    remove_stale_namespaces()
    ci.run_unittest()


if __name__ == "__main__":
    main()
