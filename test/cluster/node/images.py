"""The node's container images, built on the machine (there is no registry) and imported into the
node's containerd under exact names, in the CRI plugin's containerd namespace (k8s.io).

- the sandbox ("pause") image, under exactly containerd's sandbox_image: busybox-static's sleep;
  the CRI plugin stops a sandbox with SIGKILL, so nothing has to handle signals;
- the test image (layout.BUSYBOX_IMAGE): busybox-static with every applet linked (sh, ip, sysctl,
  nc, wget, …), what the scenarios' pods run;
- manifold's image, built as an operator builds it: `podman build` of conf/Containerfile with the
  static release binary in the build context, tagged with the image name conf/manifold-daemonset.yaml
  names (so `kubectl apply -f conf/` needs no edit), saved as a docker archive. podman runs inside
  the node's mount namespace, so its storage is the node's /var/lib/containers, not the machine's.
"""
import os
import re
import shutil
import subprocess
import sys

from node import layout, namespaces

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
sys.path.insert(0, os.path.join(REPO, "test", "integration"))
from runtimes.rootfs import oci_archive  # noqa: E402

BUSYBOX = "/bin/busybox"
DAEMONSET = os.path.join(REPO, "conf", "manifold-daemonset.yaml")
CONTAINERFILE = os.path.join(REPO, "conf", "Containerfile")


def daemonset_image():
    """The image conf/manifold-daemonset.yaml runs (its `image:` line)."""
    with open(DAEMONSET, encoding="utf-8") as f:
        match = re.search(r"^\s+image:\s*(\S+)\s*$", f.read(), re.M)
    if not match:
        raise ValueError("no image: line in %s" % DAEMONSET)
    return match.group(1)


def busybox_rootfs(path):
    """A root filesystem at path: busybox-static, a link per applet, the usual mount points."""
    if not os.access(BUSYBOX, os.X_OK):
        raise FileNotFoundError("%s missing: install busybox-static" % BUSYBOX)
    for name in ("bin", "proc", "sys", "dev", "tmp", "etc", "run", "var"):
        os.makedirs(os.path.join(path, name))
    shutil.copy2(BUSYBOX, os.path.join(path, "bin", "busybox"))
    applets = subprocess.run([BUSYBOX, "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            os.symlink("busybox", os.path.join(path, "bin", applet))
    with open(os.path.join(path, "etc", "passwd"), "w", encoding="utf-8") as f:
        f.write("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
    with open(os.path.join(path, "etc", "group"), "w", encoding="utf-8") as f:
        f.write("root:x:0:\nnobody:x:65534:\n")
    return path


def build_archives(node):
    """Writes the pause and test image archives; returns [(archive, name)]."""
    work = node.path("images")
    os.makedirs(work, exist_ok=True)
    rootfs = busybox_rootfs(os.path.join(work, "rootfs"))
    out = [(oci_archive(rootfs, os.path.join(work, "pause.tar"), layout.PAUSE_IMAGE,
                        ["/bin/sleep", "infinity"]), layout.PAUSE_IMAGE),
           (oci_archive(rootfs, os.path.join(work, "busybox.tar"), layout.BUSYBOX_IMAGE,
                        ["/bin/sh"]), layout.BUSYBOX_IMAGE)]
    shutil.rmtree(rootfs)
    return out


def build_manifold(node, holder, manifold_bin, name):
    """podman build of conf/Containerfile with manifold_bin as /manifold, inside the node's mount
    namespace; returns the docker archive of image `name`."""
    context = node.path("images", "manifold-context")
    os.makedirs(context)
    shutil.copy2(manifold_bin, os.path.join(context, "manifold"))
    shutil.copy2(CONTAINERFILE, os.path.join(context, "Containerfile"))
    archive = node.path("images", "manifold.tar")
    for argv in (["podman", "build", "--quiet", "--network", "none", "-t", name,
                  "-f", os.path.join(context, "Containerfile"), context],
                 ["podman", "save", "--format", "docker-archive", "-o", archive, name]):
        run = subprocess.run(namespaces.enter_argv(holder, argv), stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise namespaces.NodeError("%s failed:\n%s%s" % (" ".join(argv[:2]), run.stdout,
                                                             run.stderr))
    shutil.rmtree(context)
    return archive


def ctr_argv(holder, *args):
    return namespaces.enter_argv(holder, ["ctr", "--address", layout.CONTAINERD_SOCKET,
                                          "--namespace", layout.CONTAINERD_NAMESPACE, *args])


def import_archive(holder, archive, name):
    """`ctr images import` of an archive into the CRI plugin's namespace; checks the name is there."""
    run = subprocess.run(ctr_argv(holder, "images", "import", archive), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise namespaces.NodeError("ctr images import %s failed:\n%s%s" % (archive, run.stdout,
                                                                           run.stderr))
    listed = subprocess.run(ctr_argv(holder, "images", "list", "--quiet"), check=True,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout
    if name not in listed.split():
        raise namespaces.NodeError("image %s is not in containerd after importing %s:\n%s" %
                                   (name, archive, listed))
