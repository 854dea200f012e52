"""A container root filesystem built from busybox-static, the only image the tests need.

There is no registry: podman (`--rootfs`) and ctr (`ctr run --rootfs`) run a directory holding
/bin/busybox, links for the applets the tests call, the mount points runtimes expect, and /www
with a page `httpd` serves (its text is INDEX_TEXT, so a test can tell the page came through).
The CRI plugin needs an image instead (the sandbox, or "pause", image): oci_archive packs the
same directory as a one-layer OCI image layout archive that `ctr images import` accepts.
"""
import hashlib
import json
import os
import shutil
import tarfile

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


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _add_blob(layout, path_or_bytes):
    """Stores a blob in the layout (a file path or bytes); returns its descriptor fields."""
    blobs = os.path.join(layout, "blobs", "sha256")
    if isinstance(path_or_bytes, bytes):
        digest = hashlib.sha256(path_or_bytes).hexdigest()
        with open(os.path.join(blobs, digest), "wb") as f:
            f.write(path_or_bytes)
        size = len(path_or_bytes)
    else:
        digest = _sha256_file(path_or_bytes)
        os.rename(path_or_bytes, os.path.join(blobs, digest))
        size = os.path.getsize(os.path.join(blobs, digest))
    return {"digest": "sha256:" + digest, "size": size}


def oci_archive(rootfs, archive, name, entrypoint):
    """Writes an OCI image layout archive (for `ctr images import`) of rootfs as one uncompressed
    layer, named name (the io.containerd.image.name annotation), running entrypoint; returns
    archive."""
    layout = archive + ".d"
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    layer_path = os.path.join(layout, "layer.tar")
    with tarfile.open(layer_path, "w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(os.listdir(rootfs)):
            tar.add(os.path.join(rootfs, entry), arcname=entry)
    layer = _add_blob(layout, layer_path)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Entrypoint": entrypoint, "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}
    config_desc = _add_blob(layout, json.dumps(config).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": dict(mediaType="application/vnd.oci.image.config.v1+json", **config_desc),
                "layers": [dict(mediaType="application/vnd.oci.image.layer.v1.tar", **layer)]}
    manifest_desc = _add_blob(layout, json.dumps(manifest).encode())
    index = {"schemaVersion": 2, "manifests": [dict(
        mediaType="application/vnd.oci.image.manifest.v1+json", **manifest_desc,
        annotations={"io.containerd.image.name": name,
                     "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]})]}
    with open(os.path.join(layout, "index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f)
    with open(os.path.join(layout, "oci-layout"), "w", encoding="utf-8") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with tarfile.open(archive, "w") as tar:
        for entry in ("oci-layout", "index.json", "blobs"):
            tar.add(os.path.join(layout, entry), arcname=entry)
    shutil.rmtree(layout)
    return archive
