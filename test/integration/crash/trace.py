"""Finding manifold's side-effect steps with strace, and injecting a SIGKILL or an errno into one.

manifold is started by the runtime through a wrapper script (Tracer.install) that execs
`strace -o FILE ... -- manifold`. strace runs WITHOUT -f: it traces manifold's own (single) thread
only, never a delegate, `iptables-restore` or any other child, whose system calls happen in other
processes. parse() checks that assumption on every counting run: a clone with CLONE_THREAD makes
it fail, since a thread's calls would be invisible.

A counting run traces every system call of a successful verb. Each call gets its index among the
calls of the same name (strace counts `when=` per system call and per tracee, so
`-e inject=rename:signal=KILL:when=3` hits exactly the third rename of manifold's thread). A step
is a call that changed state outside the process (kill_steps): files created, written, renamed,
removed, chmod'ed or locked (manifold's own log file excepted: logging is not state), processes
started (clone/clone3/fork/vfork in manifold; the child's execve is the child's), signals sent,
every send on a socket (API requests over TLS, the rules fed to `iptables-restore` over a socket
pair) and every netlink request that modifies something (RTM_NEW*/DEL*/SET*), plus exit_group
(killed after printing its result). Calls that change nothing — failed calls, netlink GET/dump
requests, reads — are not steps: a kill there leaves exactly the state of a kill at the next step.
strace delivers the SIGKILL at the entry of the call, so the call itself never runs.

error_points() lists where an errno is injected instead: the cache's write-type calls (openat with
O_CREAT, write, rename, mkdir, unlink, the progress mark's lsetxattr under cniDir) and every netlink sendmsg/recvmsg (but the
receives whose index a TCP read before them makes unstable, see there).

Every injected run is verified (verify_hit): the call strace killed or failed must be the same call
(name, index and argument shape) the counting run found, so a change in manifold's call sequence
between runs is reported instead of silently testing something else.
"""
import functools
import os
import re
import shutil
import stat
import subprocess

STRACE = shutil.which("strace") or "/usr/bin/strace"

_LINE_RE = re.compile(r"^(?P<name>[a-z_0-9]+)\((?P<args>.*)\)\s+=\s+(?P<result>.*)$")
_FD_RE = re.compile(r"^(?P<fd>-?\d+)(?:<(?P<what>[^>]*)>)?")
_MKOSTEMP_RE = re.compile(r"\.tmp-[A-Za-z0-9]{6}\b")
_NUMBERS_RE = re.compile(r"0x[0-9a-fA-F]+|\d+")
# A path argument: a quoted string starting with "/" that is a whole value (the first argument,
# one after ", ", an argv element after "[", a socket's sun_path). Inside a quoted data argument
# (a TLS record's iov_base) strace escapes every quote as \", so bytes that happen to read "/..."
# there are never taken for a path.
_PATH_ARG_RE = re.compile(r'(?:^|, |\[|sun_path=)"(/[^"]*)"')
_NLMSG_TYPE_RE = re.compile(r"nlmsg_type=(?P<type>0x[0-9a-fA-F]+|\d+|[A-Z_]+)")

FILE_CHANGES = frozenset({
    "mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "unlink", "unlinkat", "link",
    "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat",
    "lchown", "truncate", "ftruncate", "fallocate", "utimensat", "flock", "mknod", "mknodat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr"})
OPENS = frozenset({"open", "openat", "openat2", "creat"})
WRITES = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
SENDS = frozenset({"sendto", "sendmsg", "sendmmsg"})
RECEIVES = frozenset({"recvfrom", "recvmsg", "recvmmsg"})
SPAWNS = frozenset({"clone", "clone3", "fork", "vfork"})
SIGNALS = frozenset({"kill", "tkill", "tgkill", "pidfd_send_signal"})
MOUNTS = frozenset({"mount", "umount2", "move_mount"})
CACHE_ERROR_CALLS = frozenset({"open", "openat", "creat", "write", "pwrite64", "writev", "rename",
                               "renameat", "renameat2", "mkdir", "mkdirat", "unlink", "unlinkat",
                               "setxattr", "lsetxattr", "fsetxattr"})
CACHE_ERRNOS = ("ENOSPC", "EIO")
NETLINK_ERRNOS = ("ENOBUFS", "EBUSY")


@functools.lru_cache(maxsize=None)
def sanitized(binary):
    """True for a binary linked with AddressSanitizer, whose system calls (and LeakSanitizer's
    refusal to run under ptrace) make it useless here."""
    proc = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
    return "libasan" in proc.stdout


class TraceError(AssertionError):
    """The trace does not say what the suite needs (a thread, an unparsable trace, a missed hit)."""


class Call:
    """One system call of manifold's thread: name, raw arguments and result, its 1-based index
    among the calls of the same name, and what its first fd argument referred to."""

    def __init__(self, name, args, result, index, fd_kind, fd_decoration):
        self.name = name
        self.args = args
        self.result = result
        self.index = index
        self.fd_kind = fd_kind              # "file", "pipe", "netlink", "socket", "other" or None
        self.fd_decoration = fd_decoration  # what strace -yy printed after the fd, or None

    @property
    def failed(self):
        """True when the call returned an error (it changed nothing)."""
        return self.result.startswith("-1 ")

    @property
    def injected(self):
        """True when strace failed this call on purpose."""
        return "(INJECTED)" in self.result

    @property
    def fd_path(self):
        """The path of the file the fd argument refers to, or None."""
        return self.fd_decoration if self.fd_kind == "file" else None

    def shape(self):
        """What identifies the call across runs, from what strace decodes at its entry (a killed
        or failed call's output arguments are not decoded): its name, the kind or path of its fd
        and its path arguments, every number blanked (pids in temp names, inode numbers) and the
        random suffix of mkostemp's temp names (util::write_file_atomic) too."""
        fd = self.fd_decoration or ""
        if not fd.startswith("/"):
            fd = re.split(r"[:\[]", fd, maxsplit=1)[0]
        paths = _PATH_ARG_RE.findall(self.args)
        text = _MKOSTEMP_RE.sub(".tmp-XXXXXX", "%s(%s %s)" % (self.name, fd, " ".join(paths)))
        return _NUMBERS_RE.sub("#", text)

    def paths(self):
        """Every absolute path the call names: quoted path arguments and its fd's file."""
        out = _PATH_ARG_RE.findall(self.args)
        if self.fd_path:
            out.append(self.fd_path)
        return out

    def describe(self, replacements=()):
        """A short human description, with long directory prefixes replaced."""
        text = "%s#%d %s" % (self.name, self.index, re.sub(r"^AT_FDCWD<[^>]*>, ", "", self.args)[:150])
        for old, new in replacements:
            text = text.replace(old, new)
        return text


class Trace:
    """A parsed strace output: the calls in order, and whether the process was SIGKILLed."""

    def __init__(self, calls, killed):
        self.calls = calls
        self.killed = killed

    def last_call(self):
        """The call the process was in when it died (or its last one)."""
        return self.calls[-1] if self.calls else None

    def injected_calls(self):
        """The calls strace failed on purpose."""
        return [c for c in self.calls if c.injected]


def _socket_family(args):
    return "netlink" if args.startswith("AF_NETLINK") else "socket"


def _fd_kind(decoration, sockets, fd):
    """What fd refers to: the socket() call that made it, else strace's -yy decoration."""
    if fd in sockets:
        return sockets[fd]
    if decoration is None:
        return None
    if decoration.startswith("/"):
        return "file"
    if decoration.startswith("pipe:"):
        return "pipe"
    if "NETLINK" in decoration:
        return "netlink"
    if decoration.split(":", 1)[0] in ("socket", "TCP", "TCPv6", "UDP", "UDPv6", "UNIX",
                                       "UNIX-STREAM", "UNIX-DGRAM"):
        return "socket"
    return "other"


def _track_fds(name, args, result, sockets):
    """Keeps `sockets` (fd -> "netlink"/"socket") current across socket() and close(), for when
    strace cannot name a socket (socket pairs it always can)."""
    fd_match = _FD_RE.match(result)
    if name == "socket" and fd_match and not result.startswith("-1"):
        sockets[int(fd_match.group("fd"))] = _socket_family(args)
    elif name == "close":
        arg = _FD_RE.match(args)
        if arg:
            sockets.pop(int(arg.group("fd")), None)


def parse(text):
    """Parses strace output of one process (no -f); raises TraceError when it started a thread."""
    calls, counts, sockets = [], {}, {}
    killed = False
    for line in text.splitlines():
        if line.startswith("+++ killed by SIGKILL"):
            killed = True
        match = _LINE_RE.match(line)
        if not match:
            continue
        name, args, result = match.group("name"), match.group("args"), match.group("result")
        if name in SPAWNS and "CLONE_THREAD" in args:
            raise TraceError("manifold started a thread (%s): its system calls are not traced; "
                             "the crash suite needs -f and per-thread steps" % line[:200])
        counts[name] = counts.get(name, 0) + 1
        fd_arg = _FD_RE.match(args)
        kind, decoration = None, None
        if fd_arg:
            decoration = fd_arg.group("what")
            kind = _fd_kind(decoration, sockets, int(fd_arg.group("fd")))
        calls.append(Call(name, args, result, counts[name], kind, decoration))
        _track_fds(name, args, result, sockets)
    return Trace(calls, killed)


def read(path):
    """Parses a trace file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse(f.read())


# ---- classification ---------------------------------------------------------------------------------

def _open_creates(call):
    if call.name == "creat":
        return True
    return call.name in OPENS and ("O_CREAT" in call.args or "O_TRUNC" in call.args)


def _netlink_type(call):
    match = _NLMSG_TYPE_RE.search(call.args)
    if not match:
        return None
    value = match.group("type")
    if value.startswith("RTM_") or value.startswith("NLMSG_"):
        return value
    number = int(value, 0)
    verbs = ("NEW", "DEL", "GET", "SET")
    return "RTM_%s#%d" % (verbs[(number - 16) % 4], number) if number >= 16 else "NLMSG#%d" % number


def netlink_modifies(call):
    """True for a netlink request that is not a GET/dump (unknown types count as modifying)."""
    kind = _netlink_type(call)
    return kind is None or not kind.startswith("RTM_GET")


def _touches_log(call, log_file):
    return any(p == log_file or p.startswith(log_file + ".") or p.startswith(log_file + "-")
               for p in call.paths())


def is_kill_step(call, log_file):
    """Whether a successful call of the counting run changed state outside manifold's process."""
    if call.failed or _touches_log(call, log_file):
        return False
    if call.name in FILE_CHANGES or call.name in MOUNTS or call.name in SIGNALS:
        return True
    if _open_creates(call) or call.name in SPAWNS or call.name == "exit_group":
        return True
    if call.name in WRITES or call.name in SENDS:
        if call.fd_kind == "netlink":
            return netlink_modifies(call)
        return call.fd_kind in ("file", "socket")
    return False


def kill_steps(trace, log_file):
    """The counting run's steps, in order."""
    return [c for c in trace.calls if is_kill_step(c, log_file)]


def _under(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def is_cache_call(call, cni_dir):
    """A successful write-type call of the cache: its path or fd is under cniDir."""
    if call.failed or call.name not in CACHE_ERROR_CALLS:
        return False
    if call.name in OPENS and not _open_creates(call):
        return False
    if call.name in WRITES and call.fd_kind != "file":
        return False
    return any(_under(p, cni_dir) for p in call.paths())


def is_netlink_io(call):
    """A successful netlink send or receive (requests of every kind, and their answers)."""
    return (not call.failed and call.fd_kind == "netlink"
            and (call.name in SENDS or call.name in RECEIVES or call.name in WRITES))


def point_kind(call):
    """"cache", "netlink request" or "netlink receive": what an error point is, for the figures."""
    if call.fd_kind != "netlink":
        return "cache"
    return "netlink receive" if call.name in RECEIVES else "netlink request"


def error_points(trace, cni_dir):
    """(call, errnos) for every call an errno is injected into: cache calls and netlink I/O. A
    netlink receive that comes after a receive of the same system call on another socket (an API
    answer read over TCP) is left out: how many reads a TCP answer takes depends on timing, so its
    index would not be stable between runs, and strace 6.1 cannot count per descriptor."""
    points, unstable = [], set()
    for call in trace.calls:
        if call.name in RECEIVES and call.fd_kind == "socket":
            unstable.add(call.name)
        if is_cache_call(call, cni_dir):
            points.append((call, CACHE_ERRNOS))
        elif is_netlink_io(call) and call.name not in unstable:
            points.append((call, NETLINK_ERRNOS))
    return points


# ---- running manifold under strace ------------------------------------------------------------------

class Injection:
    """What one run does to manifold: nothing (a counting run), a SIGKILL or an errno at a call."""

    def __init__(self, call=None, errno=None):
        self.call = call
        self.errno = errno

    def strace_options(self):
        """The strace options of this run."""
        if self.call is None:
            return ["-e", "trace=all"]
        action = "error=%s" % self.errno if self.errno else "signal=KILL"
        return ["-e", "trace=" + self.call.name,
                "-e", "inject=%s:%s:when=%d" % (self.call.name, action, self.call.index)]

    def label(self):
        """"kill" or the errno."""
        return self.errno or "kill"


class Tracer:
    """Puts strace between the runtime and manifold: `<bin_dir>/manifold` becomes a script that
    execs strace with this run's options, writing the trace to trace_path."""

    def __init__(self, bin_dir, manifold_bin, trace_path):
        self.wrapper = os.path.join(bin_dir, "manifold")
        self.manifold_bin = os.path.abspath(manifold_bin)
        self.trace_path = trace_path

    def install(self, injection):
        """Writes the wrapper for the next manifold run (atomically: never a half-written script)."""
        options = " ".join("'%s'" % o for o in injection.strace_options())
        script = "#!/bin/sh\nexec %s -o '%s' -s 128 -yy %s -- '%s' \"$@\"\n" % (
            STRACE, self.trace_path, options, self.manifold_bin)
        tmp = self.wrapper + ".new"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(script)
        os.chmod(tmp, stat.S_IRWXU)
        os.replace(tmp, self.wrapper)
        if os.path.exists(self.trace_path):
            os.unlink(self.trace_path)

    def uninstall(self):
        """Restores the plain symlink to manifold."""
        if os.path.lexists(self.wrapper):
            os.unlink(self.wrapper)
        os.symlink(self.manifold_bin, self.wrapper)

    def trace(self):
        """The parsed trace of the last run (an empty trace when manifold never ran)."""
        if not os.path.exists(self.trace_path):
            return Trace([], False)
        return read(self.trace_path)


def _hit(trace, injection):
    """The call the injection hit, or None with the reason."""
    if injection.errno:
        hits = trace.injected_calls()
        if not hits:
            return None, "the errno was never injected"
        return hits[0], None
    if not trace.killed:
        return None, "manifold was not killed"
    return trace.last_call(), None


def verify_hit(trace, injection):
    """Raises TraceError unless the injected run hit the call the counting run found."""
    target = injection.call
    hit, why = _hit(trace, injection)
    if hit is None:
        raise TraceError("%s: manifold made fewer %s calls than in the counting run" % (why, target.name))
    if (hit.name, hit.index, hit.shape()) != (target.name, target.index, target.shape()):
        raise TraceError("the injection hit %s instead: manifold's call sequence differs between "
                         "runs" % hit.describe())
