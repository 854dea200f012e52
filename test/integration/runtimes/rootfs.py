"""A container root filesystem built from busybox-static, the only image the tests need.

There is no registry: podman (`--rootfs`) and ctr (`ctr run --rootfs`) run a directory holding
/bin/busybox, links for the applets the tests call, the mount points runtimes expect, and /www
with a page `httpd` serves (its text is INDEX_TEXT, so a test can tell the page came through).
"""
import os
import shutil

BUSYBOX = "/bin/busybox"
APPLETS = ("sh", "sleep", "httpd", "cat", "ip")
INDEX_TEXT = "served by a manifold runtime test\n"
_MOUNT_POINTS = ("proc", "sys", "dev", "tmp", "etc", "run")


def busybox_rootfs(path):
    """Creates the root filesystem at path (which must not exist) and returns path."""
    if not os.access(BUSYBOX, os.X_OK):
        raise FileNotFoundError("%s missing: install busybox-static" % BUSYBOX)
    os.makedirs(os.path.join(path, "bin"))
    for name in _MOUNT_POINTS:
        os.makedirs(os.path.join(path, name))
    shutil.copy2(BUSYBOX, os.path.join(path, "bin", "busybox"))
    for applet in APPLETS:
        os.symlink("busybox", os.path.join(path, "bin", applet))
    os.makedirs(os.path.join(path, "www"))
    with open(os.path.join(path, "www", "index.html"), "w", encoding="utf-8") as f:
        f.write(INDEX_TEXT)
    with open(os.path.join(path, "etc", "passwd"), "w", encoding="utf-8") as f:
        f.write("root:x:0:0:root:/:/bin/sh\n")
    with open(os.path.join(path, "etc", "group"), "w", encoding="utf-8") as f:
        f.write("root:x:0:\n")
    return path
