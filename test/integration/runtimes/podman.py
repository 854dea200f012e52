"""podman 4 with its CNI backend, configured entirely inside one test's tree.

containers.conf (the test's own, passed through CONTAINERS_CONF; /etc/containers is never
edited) selects the CNI backend with the test's own network_config_dir and cni_plugin_dirs, runc,
the cgroupfs manager, file events and file locks in the tree's tmp_dir, explicit default_ulimits
(without CAP_SYS_RESOURCE runc cannot raise podman's built-in defaults), and no AppArmor profile
(podman would load its default profile into the kernel, a change the test could not undo).
Storage (--root/--runroot, vfs) is in the tree too, and containers run from a busybox rootfs
directory, so no image is needed. Every command runs in the test's private mount namespace and in
its node network namespace: the CNI plugins podman runs create their host-side links there, and
podman's netns bind mounts, runc state and libcni cache land in the tree. Podman passes its whole
environment to the plugins, so ASAN_OPTIONS/UBSAN_OPTIONS of the test reach manifold.
"""
import json
import os
import resource
import subprocess

_ULIMIT_CAP = 4096


def _ulimit(name, kind):
    hard = resource.getrlimit(kind)[1]
    value = _ULIMIT_CAP if hard == resource.RLIM_INFINITY else min(hard, _ULIMIT_CAP)
    return '"%s=%d:%d"' % (name, value, value)


def _toml_list(items):
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


class PodmanError(AssertionError):
    """A podman command failed; the message holds its output."""


class Podman:
    """Runs podman for one test; network_dir holds the networks (one .conflist each)."""

    def __init__(self, root, mounts, node_netns, network_dir, plugin_dirs, cgroup_parent):
        self.root = root
        self.mounts = mounts
        self.node_netns = node_netns
        self.network_dir = network_dir
        self.cgroup_parent = "/" + cgroup_parent
        os.makedirs(network_dir, exist_ok=True)
        for name in ("storage", "runroot", "tmp"):
            os.makedirs(os.path.join(root, name), exist_ok=True)
        self.conf_path = os.path.join(root, "containers.conf")
        with open(self.conf_path, "w", encoding="utf-8") as f:
            f.write(self._containers_conf(plugin_dirs))

    def _containers_conf(self, plugin_dirs):
        return "\n".join([
            "[containers]",
            'apparmor_profile = "unconfined"',
            'cgroups = "enabled"',
            "default_ulimits = [%s, %s]" % (_ulimit("nofile", resource.RLIMIT_NOFILE),
                                            _ulimit("nproc", resource.RLIMIT_NPROC)),
            "[network]",
            'network_backend = "cni"',
            "cni_plugin_dirs = " + _toml_list(plugin_dirs),
            "network_config_dir = " + json.dumps(self.network_dir),
            "[engine]",
            'cgroup_manager = "cgroupfs"',
            'events_logger = "file"',
            'runtime = "runc"',
            'lock_type = "file"',
            "tmp_dir = " + json.dumps(os.path.join(self.root, "tmp")),
            ""])

    def __call__(self, *args, check=True, timeout=180):
        """Runs `podman <args>`; returns the CompletedProcess (text), raises PodmanError if check
        and it failed."""
        argv = self.mounts.prefix(self.node_netns) + [
            "podman", "--root", os.path.join(self.root, "storage"),
            "--runroot", os.path.join(self.root, "runroot"), "--storage-driver", "vfs", *args]
        env = dict(os.environ, CONTAINERS_CONF=self.conf_path)
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise PodmanError("podman %s failed (%d):\n%s%s" % (
                " ".join(args), proc.returncode, proc.stdout, proc.stderr))
        return proc

    def write_network(self, conflist):
        """Adds a network (a conflist dict) to the network config dir."""
        path = os.path.join(self.network_dir, conflist["name"] + ".conflist")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(conflist, f, indent=2)

    def run(self, name, rootfs, networks, *options, check=True):
        """Starts a detached container serving rootfs's /www with httpd on port 80."""
        return self("run", "-d", "--name", name, "--network", ",".join(networks),
                    "--cgroup-parent", self.cgroup_parent, "--dns", "none", "--no-hosts",
                    *options, "--rootfs", rootfs, "/bin/httpd", "-f", "-p", "80", "-h", "/www",
                    check=check)

    def inspect(self, name):
        """`podman inspect` of one container."""
        return json.loads(self("inspect", name).stdout)[0]

    def pid(self, name):
        """The container's init pid (0 when it is not running)."""
        return self.inspect(name)["State"]["Pid"]

    def container_ids(self):
        """The IDs of every container this podman knows."""
        return self("ps", "-a", "--no-trunc", "-q").stdout.split()

    def remove_all(self):
        """Removes every container, running or not (the test's cleanup)."""
        self("rm", "--all", "--force", "--time", "0")
