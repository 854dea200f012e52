"""The static release binary under test, for the tests that prove it (test_static_*.py).

It comes from MANIFOLD_STATIC_BIN, which CTest sets to the test build's static sub-build
(<build>/static/manifold, see test/CMakeLists.txt); run by hand without it, the binary is built
by test/static-check.sh --build-only. MANIFOLD_STATIC_OPENSSL_SOURCE, set alongside it when that
sub-build links the TLS-client OpenSSL (lib/openssl.cmake), names the source tree it was built
from, so a test can check that the binary really carries that build.
"""
import os
import subprocess

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def static_binary():
    """The static release binary: MANIFOLD_STATIC_BIN, else built by test/static-check.sh."""
    path = os.environ.get("MANIFOLD_STATIC_BIN")
    if path:
        if not os.path.isfile(path):
            raise RuntimeError("MANIFOLD_STATIC_BIN=%s does not exist: build the test build's `all` "
                               "target (it builds <build>/static/manifold)" % path)
        return os.path.abspath(path)
    proc = subprocess.run(["bash", os.path.join(_REPO, "test", "static-check.sh"), "--build-only"],
                          stdout=subprocess.PIPE, text=True, timeout=3000)
    if proc.returncode != 0:
        raise RuntimeError("test/static-check.sh --build-only failed (%d)" % proc.returncode)
    # static-check.sh builds with MANIFOLD_OPENSSL_SOURCE, else the source it fetched.
    os.environ.setdefault("MANIFOLD_STATIC_OPENSSL_SOURCE", os.environ.get("MANIFOLD_OPENSSL_SOURCE")
                          or os.path.join(_REPO, "build", "openssl-source"))
    return proc.stdout.strip().splitlines()[-1]


def expected_tls_build():
    """What `manifold version` must name after "TLS: ... (": the TLS-client build of the source
    in MANIFOLD_STATIC_OPENSSL_SOURCE, or None when the binary was not built from one."""
    source = os.environ.get("MANIFOLD_STATIC_OPENSSL_SOURCE")
    if not source:
        return None
    origin = "OpenSSL source"
    marker = os.path.join(source, ".manifold-source")
    if os.path.isfile(marker):
        with open(marker, encoding="utf-8") as f:
            origin = f.readline().strip()
    return "TLS-client build of " + origin
