"""Multus CNI thin on the test node, installed as its own project installs it, so a scenario can
move a live node from Multus to manifold.

Its binaries come from the pinned wrapper module modules/multus (build-module.sh, cached per
machine): multus, install_multus, thin_entrypoint and passthru, with Multus's own thin DaemonSet
manifest of the same version. There is no registry, so the image that manifest names
(ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot, pulled only if not present) is built here with
the files where Multus's image holds them (/usr/src/multus-cni/bin/, /install_multus,
/thin_entrypoint) and imported into the node's containerd; then the manifest is applied unchanged:
its init container copies the plugin into /opt/cni/bin, its thin_entrypoint writes
00-multus.conf(list) wrapping the node's primary config and the kubeconfig of the multus
ServiceAccount that its ClusterRole and binding authorize.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from node import images  # noqa: E402

IMAGE = "ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot"
MANIFEST = "multus-daemonset.yml"
DAEMONSET = "kube-multus-ds"
NAMESPACE = "kube-system"
# What the manifest creates besides its CRD (the NAD CRD, which manifold's conf/ holds too and which
# must outlive Multus): removed when Multus goes.
OBJECTS = (("daemonset", DAEMONSET, NAMESPACE), ("configmap", "multus-cni-config", NAMESPACE),
           ("serviceaccount", "multus", NAMESPACE), ("clusterrolebinding", "multus", None),
           ("clusterrole", "multus", None))
# The files Multus leaves on the node that the migration removes (its cache dir stays until the
# last pod Multus attached is gone: manifold's DEL reads and removes it).
NODE_FILES = ("/etc/cni/net.d/00-multus.conf", "/etc/cni/net.d/00-multus.conflist",
              "/etc/cni/net.d/multus.d", "/opt/cni/bin/multus", "/opt/cni/bin/passthru")
CACHE_DIR = "/var/lib/cni/multus"


def build():
    """The directory of Multus's binaries and manifest (built unless this machine has them)."""
    script = os.path.join(os.path.dirname(HERE), "build-module.sh")
    run = subprocess.run(["bash", script, "multus"], stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=1800)
    if run.returncode != 0:
        raise AssertionError("build-module.sh multus failed:\n" + run.stderr)
    return run.stdout.strip()


def import_image(node, bins):
    """Builds Multus's image from `bins` and imports it into the node's containerd."""
    work = node.layout.path("images", "multus")
    shutil.rmtree(work, ignore_errors=True)
    rootfs = os.path.join(work, "rootfs")
    for name in ("usr/src/multus-cni/bin", "proc", "sys", "dev", "tmp", "etc", "run", "var"):
        os.makedirs(os.path.join(rootfs, name))
    for name in ("multus", "passthru"):
        shutil.copy2(os.path.join(bins, name), os.path.join(rootfs, "usr/src/multus-cni/bin", name))
    for name in ("install_multus", "thin_entrypoint"):
        shutil.copy2(os.path.join(bins, name), os.path.join(rootfs, name))
    archive = images.oci_archive(rootfs, os.path.join(work, "multus.tar"), IMAGE,
                                 ["/thin_entrypoint"])
    images.import_archive(node.holder, archive, IMAGE)
    shutil.rmtree(work)


def remove_image(node):
    subprocess.run(images.ctr_argv(node.holder, "images", "rm", IMAGE), stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=120)


def uninstall(cluster):
    """Multus's objects deleted (the CRD kept) and its files removed from the node."""
    for kind, name, namespace in OBJECTS:
        cluster.kubectl("delete", kind, name, "--ignore-not-found", "--wait=true",
                        *(["-n", namespace] if namespace else []), timeout=150)
    for path in NODE_FILES:
        path = cluster.node.layout.inside(path)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def cached(node):
    """The files below Multus's cache directory on the node (relative paths)."""
    root = node.layout.inside(CACHE_DIR)
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files]
    return sorted(out)
