"""Real container runtimes for manifold's integration tests (Python 3 standard library).

mountns.py     a private mount namespace giving a runtime the test's own /run, /var/lib, /opt and
               /etc/cni/net.d, so nothing it writes lands in the machine's directories
cgroups.py     the test's own cgroup parent in every hierarchy, and its removal
rootfs.py      a root filesystem (and an OCI image archive) built from busybox-static
podman.py      podman 4 with its CNI backend, configured entirely inside the test's tree
containerd.py  a containerd daemon of the test's own and the `ctr` client (`ctr run --cni`)
case.py        the unittest base class of the runtime tests: configs, sandbox views, leak checks
"""
