"""Real container runtimes for manifold's integration tests (Python 3 standard library, plus
Debian's python3-grpcio and python3-grpc-tools for the CRI client).

mountns.py     a private mount namespace giving a runtime the test's own /run, /var/lib, /opt and
               /etc/cni/net.d, so nothing it writes lands in the machine's directories
cgroups.py     the test's own cgroup parent in every hierarchy, and its removal
rootfs.py      a root filesystem (and an OCI image archive) built from busybox-static
podman.py      podman 4 with its CNI backend, configured entirely inside the test's tree
containerd.py  a containerd daemon of the test's own and the `ctr` client (`ctr run --cni`)
cri.py         a CRI runtime.v1 client (the kubelet's calls) built from cri.proto at test time,
               and the configuration of containerd's CRI plugin
case.py        the unittest base class of the runtime tests: configs, sandbox views, leak checks
"""
