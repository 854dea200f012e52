"""ApiServerDouble: drive a Kubernetes API server double process from any test.

    import sys; sys.path.insert(0, "<repo>/test/integration/apiserver")
    from apiserver_double import ApiServerDouble

    with ApiServerDouble() as api:
        api.add_pod("default", "web", annotations={"k8s.v1.cni.cncf.io/networks": "macvlan1"})
        api.add_nad("default", "macvlan1", '{"cniVersion":"1.0.0","type":"macvlan"}')
        api.write_kubeconfig("/tmp/kc", auth="tokenFile")
        ... run manifold ...
        assert [r["method"] for r in api.requests()] == ["GET", "GET", "PUT"]

The double runs `server.py` as a subprocess; start() returns once the process has printed its
READY line (no sleeping); attach() drives one another process started. The admin API methods
(add_pod, requests, faults, ...) come from kdouble/admin_client.py; this module owns the process,
its addresses and credentials, and the kubeconfig writer. AdminError is re-exported for tests.
"""

from __future__ import annotations

import http.client
import json
import os
import selectors
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from kdouble.admin_client import AdminClient, AdminError  # noqa: E402 (after the path set-up)
from kdouble.kubeconfig import render_kubeconfig  # noqa: E402

SERVER_SCRIPT = os.path.join(_HERE, "server.py")


class StartError(RuntimeError):
    """The double process did not become ready; carries its log."""


class ApiServerDouble(AdminClient):
    """Context manager owning one API server double process."""

    def __init__(self, directory: Optional[str] = None, tokens: Optional[list[str]] = None,
                 rbac: Optional[str] = None, client_cn: Optional[str] = None,
                 key_type: str = "ec", ipv6: bool = True, start_timeout: float = 30.0,
                 idle_timeout: float = 120.0, verbose: bool = False,
                 keep_dir: bool = False, bookmark_interval: Optional[float] = None,
                 watch_timeout: Optional[float] = None,
                 watch_history: Optional[int] = None,
                 disabled_groups: Optional[list[str]] = None) -> None:
        self._own_dir = directory is None
        self.dir = directory or tempfile.mkdtemp(prefix="apiserver-double-")
        self._keep_dir = keep_dir
        self._args = ["--dir", self.dir, "--port", "0", "--admin-port", "0",
                      "--key-type", key_type, "--idle-timeout", str(idle_timeout)]
        for token in tokens or []:
            self._args += ["--token", token]
        if rbac:
            self._args += ["--rbac", rbac]
        if client_cn:
            self._args += ["--client-cn", client_cn]
        if not ipv6:
            self._args.append("--no-ipv6")
        if verbose:
            self._args.append("--verbose")
        for group in disabled_groups or []:
            self._args += ["--disable-group", group]
        for flag, value in (("--bookmark-interval", bookmark_interval),
                            ("--watch-timeout", watch_timeout),
                            ("--watch-history", watch_history)):
            if value is not None:
                self._args += [flag, str(value)]
        self._start_timeout = start_timeout
        self._proc: Optional[subprocess.Popen] = None
        self._log = None
        self.exit_code: Optional[int] = None
        self.info: dict = {}
        self.token = ""

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> "ApiServerDouble":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "ApiServerDouble":
        """Starts the process and waits for its READY line; returns self."""
        os.makedirs(self.dir, exist_ok=True)
        self._log = open(os.path.join(self.dir, "server.log"), "ab")
        self._proc = subprocess.Popen([sys.executable, SERVER_SCRIPT, *self._args],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=self._log)
        try:
            self.info = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.token = self.info["token"]
        return self

    @classmethod
    def attach(cls, directory: str) -> "ApiServerDouble":
        """Drives a double that another process started (`server.py --dir DIRECTORY`) through
        its admin API; stop() then leaves that process and its directory alone."""
        double = cls(directory=directory)
        with open(os.path.join(directory, "ready.json"), encoding="utf-8") as f:
            double.info = json.load(f)
        double.token = double.info["token"]
        return double

    def _wait_ready(self) -> dict:
        assert self._proc is not None and self._proc.stdout is not None
        deadline = time.monotonic() + self._start_timeout
        buffer = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StartError(f"API server double not ready after "
                                     f"{self._start_timeout}s: {self._read_log()}")
                if not sel.select(remaining):
                    continue
                chunk = os.read(self._proc.stdout.fileno(), 65536)
                if not chunk:
                    code = self._proc.wait()
                    raise StartError(f"API server double exited ({code}) before ready: "
                                     f"{self._read_log()}")
                buffer += chunk
        line = buffer.split(b"\n", 1)[0].decode()
        if not line.startswith("READY "):
            raise StartError(f"unexpected output from the double: {line!r}")
        return json.loads(line[len("READY "):])

    def _read_log(self) -> str:
        try:
            with open(os.path.join(self.dir, "server.log"), encoding="utf-8",
                      errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stops the process (admin shutdown, then SIGTERM, then SIGKILL) and cleans up;
        `exit_code` is then its exit status (0 after a clean shutdown, negative when killed)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None and self.info:
                try:
                    self._call("POST", "/admin/shutdown", timeout=5)
                except (OSError, AdminError, http.client.HTTPException):
                    pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            self.exit_code = proc.returncode
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_dir and not self._keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    # ---- addresses and credentials ---------------------------------------------------------

    @property
    def url(self) -> str:
        """https://127.0.0.1:<port>"""
        return self.info["url"]

    @property
    def url6(self) -> Optional[str]:
        """https://[::1]:<port>, or None when the host has no IPv6 loopback."""
        return self.info["url6"]

    @property
    def url_localhost(self) -> str:
        """https://localhost:<port>"""
        return self.info["url_localhost"]

    @property
    def port(self) -> int:
        """The HTTPS port."""
        return self.info["port"]

    @property
    def admin_url(self) -> str:
        """The admin API's base URL."""
        return self.info["admin_url"]

    @property
    def ca_file(self) -> str:
        """PEM of the CA that signed the server and client certificates."""
        return self.info["ca_cert"]

    @property
    def client_cert(self) -> str:
        """PEM client certificate (CN = the manifold service-account user)."""
        return self.info["client_cert"]

    @property
    def client_key(self) -> str:
        """PEM key of client_cert."""
        return self.info["client_key"]

    @property
    def user(self) -> str:
        """The user name tokens and the client certificate authenticate as."""
        return self.info["user"]

    @property
    def admin_token(self) -> str:
        """Bearer token of the admin user (allowed everything, RBAC or not; never rotated)."""
        return self.info["admin_token"]

    @property
    def admin_user(self) -> str:
        """The user admin_token authenticates as."""
        return self.info["admin_user"]

    @property
    def kubeconfig(self) -> str:
        """<dir>/kubeconfig the process wrote: manifold's identity, its first token."""
        return self.info["kubeconfig"]

    @property
    def admin_kubeconfig(self) -> str:
        """<dir>/admin.kubeconfig the process wrote: the admin identity, for kubectl."""
        return self.info["admin_kubeconfig"]

    @property
    def wrong_ca_file(self) -> str:
        """A CA that did not sign the server certificate (verification must fail)."""
        return self.info["other_ca_cert"]

    @property
    def untrusted_client_cert(self) -> str:
        """A client certificate from wrong_ca_file's CA (the server must reject it)."""
        return self.info["untrusted_client_cert"]

    @property
    def untrusted_client_key(self) -> str:
        """Key of untrusted_client_cert."""
        return self.info["untrusted_client_key"]

    def ssl_context(self, cert: bool = False) -> ssl.SSLContext:
        """A client SSLContext trusting the double's CA, optionally presenting client_cert."""
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if cert:
            ctx.load_cert_chain(self.client_cert, self.client_key)
        return ctx

    # ---- kubeconfig ------------------------------------------------------------------------

    def write_token_file(self, path: str, token: Optional[str] = None) -> str:
        """Writes a token file (mode 0600, replaced atomically) and returns its path."""
        tmp = f"{path}.tmp{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token if token is not None else self.token)
        os.replace(tmp, path)
        return path

    def write_kubeconfig(self, path: str, auth: str = "token", ca: Optional[str] = None,
                         cert_form: str = "file", insecure: bool = False,
                         server: Optional[str] = None, token: Optional[str] = None,
                         token_file: Optional[str] = None, client_cert: Optional[str] = None,
                         client_key: Optional[str] = None, decoy: bool = False,
                         namespace: Optional[str] = None, fmt: str = "yaml") -> str:
        """Writes a kubeconfig for this double and returns its path.

        auth: "token" | "tokenFile" | "cert" | "none"; ca: "file" | "data" | "none" (default
        "file", or "none" when insecure); cert_form: "file" | "data"; server defaults to url;
        tokenFile defaults to <path>.token, written with the current token; decoy adds a
        non-current context first that must not be used; fmt: "yaml" | "json" (the same
        document as JSON, the form `manifold install` writes)."""
        if ca is None:
            ca = "none" if insecure else "file"
        if auth == "tokenFile" and token_file is None:
            token_file = self.write_token_file(path + ".token", token)
        text = render_kubeconfig(
            server or self.url, auth=auth, ca=ca, ca_file=self.ca_file,
            token=token if token is not None else self.token, token_file=token_file,
            client_cert=client_cert or self.client_cert,
            client_key=client_key or self.client_key, cert_form=cert_form,
            insecure=insecure, decoy=decoy, namespace=namespace, fmt=fmt)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return path
