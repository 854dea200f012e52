"""Unit tests of the crash suite's strace parsing, step classification, hit verification and CI
sampling, on canned strace lines in the format strace 6.1 prints with `-yy -s 128` (no root, no
manifold: ctest "integration: crash_trace"). They keep the suite honest when strace's output or
the classification changes.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True

from crash import trace  # noqa: E402
from crash.campaign import select_errors  # noqa: E402
from crash.trace import Injection  # noqa: E402

CNI_DIR = "/tmp/t/cache"
LOG = "/tmp/t/manifold.log"

COUNTING = """\
execve("/bin/manifold", ["/bin/manifold"], 0x7ffd /* 9 vars */) = 0
openat(AT_FDCWD</w>, "/tmp/t/manifold.log", O_WRONLY|O_CREAT|O_NOCTTY|O_APPEND|O_CLOEXEC, 0600) = 3</tmp/t/manifold.log>
mkdir("/tmp/t/cache", 0700) = -1 EEXIST (File exists)
openat(AT_FDCWD</w>, "/tmp/t/cache/c.lock", O_RDWR|O_CREAT|O_NOFOLLOW|O_CLOEXEC, 0600) = 4</tmp/t/cache/c.lock>
flock(4</tmp/t/cache/c.lock>, LOCK_EX|LOCK_NB) = 0
write(3</tmp/t/manifold.log>, "2026-12-01 [debug] saving\\n", 26) = 26
openat(AT_FDCWD</w>, "/tmp/t/cache/.tmp/c.9.0.tmp", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = 6</tmp/t/cache/.tmp/c.9.0.tmp>
write(6</tmp/t/cache/.tmp/c.9.0.tmp>, "{\\"kind\\":\\"manifold-cache\\"}", 25) = 25
rename("/tmp/t/cache/.tmp/c.9.0.tmp", "/tmp/t/cache/c.json") = 0
lsetxattr("/tmp/t/cache/c.json", "user.manifold.started", "2", 1, 0) = 0
socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 7<NETLINK:[26377]>
sendmsg(7<NETLINK:[26377]>, {msg_iov=[{iov_base=[{nlmsg_len=52, nlmsg_type=0x12 /* NLMSG_??? */, nlmsg_flags=NLM_F_REQUEST|NLM_F_ACK}]}]}, 0) = 52
recvmsg(7<NETLINK:[26377]>, {msg_iov=[{iov_base=[{nlmsg_len=72, nlmsg_type=NLMSG_ERROR}]}]}, MSG_PEEK|MSG_TRUNC) = 72
sendmsg(7<NETLINK:[26377]>, {msg_iov=[{iov_base=[{nlmsg_len=60, nlmsg_type=0x20 /* NLMSG_??? */, nlmsg_flags=NLM_F_REQUEST|NLM_F_ACK|NLM_F_EXCL|NLM_F_CREATE}]}]}, 0) = 60
clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f37, stack_size=0x9000}, 88) = 7985
write(8<pipe:[26398]>, "{\\"cniVersion\\":\\"1.0.0\\"}", 23) = 23
sendto(8<UNIX-STREAM:[162885->162886]>, "*nat\\n:CNIMESH-IN-net1 - [0:0]\\n", 31, MSG_NOSIGNAL, NULL, 0) = 31
sendmsg(9<TCP:[127.0.0.1:59652->127.0.0.1:44979]>, {msg_name=NULL, msg_iov=[{iov_base="\\27\\3\\3"}]}, MSG_NOSIGNAL) = 230
unlink("/tmp/t/cache/c.lock") = 0
write(1<pipe:[22128]>, "{\\"cniVersion\\":\\"1.1.0\\"}", 23) = 23
exit_group(0) = ?
+++ exited with 0 +++
"""


def names(calls):
    """name#index of each call."""
    return ["%s#%d" % (c.name, c.index) for c in calls]


class ClassificationTest(unittest.TestCase):
    """kill_steps and error_points of a counting run."""

    def setUp(self):
        self.trace = trace.parse(COUNTING)

    def test_kill_steps_are_the_state_changes_of_manifold(self):
        self.assertEqual(names(trace.kill_steps(self.trace, LOG)), [
            "openat#2", "flock#1", "openat#3", "write#2", "rename#1", "lsetxattr#1", "sendmsg#2", "clone3#1",
            "sendto#1", "sendmsg#3", "unlink#1", "exit_group#1"])

    def test_error_points_are_cache_writes_and_netlink_io(self):
        points = trace.error_points(self.trace, CNI_DIR)
        self.assertEqual([(n, p[1]) for n, p in zip(names([c for c, _ in points]), points)], [
            ("openat#2", trace.CACHE_ERRNOS), ("openat#3", trace.CACHE_ERRNOS),
            ("write#2", trace.CACHE_ERRNOS), ("rename#1", trace.CACHE_ERRNOS),
            ("lsetxattr#1", trace.CACHE_ERRNOS), ("sendmsg#1", trace.NETLINK_ERRNOS), ("recvmsg#1", trace.NETLINK_ERRNOS),
            ("sendmsg#2", trace.NETLINK_ERRNOS), ("unlink#1", trace.CACHE_ERRNOS)])

    def test_netlink_receives_after_a_tcp_receive_are_left_out(self):
        tcp = "recvmsg(9<TCP:[127.0.0.1:59652->127.0.0.1:44979]>, {msg_name=NULL}, 0) = 512\n"
        lines = COUNTING.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith("recvmsg("))
        points = trace.error_points(trace.parse("".join(lines[:at] + [tcp] + lines[at:])), CNI_DIR)
        self.assertEqual([c.name for c, _ in points if c.fd_kind == "netlink"], ["sendmsg", "sendmsg"])

    def test_a_thread_fails_the_parse(self):
        line = ("clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, "
                "exit_signal=0}, 88) = 7988\n")
        with self.assertRaises(trace.TraceError):
            trace.parse(COUNTING + line)

    def test_the_strace_options_count_only_the_target_call(self):
        call = trace.kill_steps(self.trace, LOG)[4]
        self.assertEqual(Injection(call).strace_options(),
                         ["-e", "trace=rename", "-e", "inject=rename:signal=KILL:when=1"])
        self.assertEqual(Injection(call, "EIO").strace_options(),
                         ["-e", "trace=rename", "-e", "inject=rename:error=EIO:when=1"])


class HitTest(unittest.TestCase):
    """verify_hit against injected runs."""

    def setUp(self):
        self.target = trace.kill_steps(trace.parse(COUNTING), LOG)[4]  # rename#1

    def test_a_kill_at_the_counted_call_is_a_hit(self):
        killed = trace.parse('rename("/tmp/t/cache/.tmp/c.12.0.tmp", "/tmp/t/cache/c.json") = ?\n'
                             "+++ killed by SIGKILL +++")
        trace.verify_hit(killed, Injection(self.target))

    def test_a_run_that_was_not_killed_is_a_miss(self):
        done = trace.parse('rename("/tmp/t/cache/.tmp/c.12.0.tmp", "/tmp/t/cache/c.json") = 0\n'
                           "+++ exited with 0 +++\n")
        with self.assertRaisesRegex(trace.TraceError, "not killed"):
            trace.verify_hit(done, Injection(self.target))

    def test_another_call_with_the_same_index_is_a_miss(self):
        other = trace.parse('rename("/tmp/t/other/x", "/tmp/t/other/y") = ?\n+++ killed by SIGKILL +++')
        with self.assertRaisesRegex(trace.TraceError, "differs between runs"):
            trace.verify_hit(other, Injection(self.target))

    def test_ciphertext_that_reads_like_a_path_does_not_change_the_call(self):
        # Two TLS records of the same request: random bytes, one holding a quote and a slash.
        counted = trace.parse('sendmsg(9<TCP:[127.0.0.1:52008->127.0.0.1:44469]>, {msg_name=NULL, '
                              'msg_iov=[{iov_base="\\27\\3\\3\\0\\335R\\225"}]}, MSG_NOSIGNAL) = 230\n')
        killed = trace.parse('sendmsg(9<TCP:[127.0.0.1:52110->127.0.0.1:44469]>, {msg_name=NULL, '
                             'msg_iov=[{iov_base="\\27\\3\\3\\0\\335\\"/x\\266, \\"/y"}]}, MSG_NOSIGNAL) = ?\n'
                             "+++ killed by SIGKILL +++")
        self.assertEqual(killed.calls[0].paths(), [])
        trace.verify_hit(killed, Injection(counted.calls[0]))

    def test_path_arguments_are_found(self):
        call = trace.parse('rename("/tmp/t/a", "/tmp/t/b") = 0\n').calls[0]
        self.assertEqual(call.paths(), ["/tmp/t/a", "/tmp/t/b"])

    def test_an_injected_errno_is_a_hit(self):
        failed = trace.parse('rename("/tmp/t/cache/.tmp/c.3.0.tmp", "/tmp/t/cache/c.json") = '
                             "-1 EIO (Input/output error) (INJECTED)\n+++ exited with 1 +++\n")
        trace.verify_hit(failed, Injection(self.target, "EIO"))


class SamplingTest(unittest.TestCase):
    """select_errors in CI and long mode."""

    def setUp(self):
        self.points = trace.error_points(trace.parse(COUNTING * 3), CNI_DIR)

    def test_long_mode_runs_every_errno_at_every_point(self):
        self.assertEqual(len(select_errors(self.points, True)), 2 * len(self.points))

    def test_ci_mode_fails_every_request_once_and_one_in_four_receives(self):
        chosen = select_errors(self.points, False)
        self.assertEqual([(c.name, c.index, e) for c, e in chosen if c.fd_kind == "netlink"], [
            ("sendmsg", 1, "ENOBUFS"), ("sendmsg", 2, "EBUSY"), ("sendmsg", 4, "ENOBUFS"),
            ("sendmsg", 5, "EBUSY"), ("sendmsg", 7, "ENOBUFS"), ("recvmsg", 3, "EBUSY"),
            ("sendmsg", 8, "ENOBUFS")])
        self.assertEqual([e for c, e in chosen if c.fd_kind != "netlink"][:4],
                         ["ENOSPC", "EIO", "ENOSPC", "EIO"])
        self.assertEqual(len(chosen), len(self.points) - 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
