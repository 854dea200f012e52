"""A client of the Kubernetes CRI runtime.v1 API, as the kubelet uses it, for containerd's CRI
plugin; and the containerd configuration of that plugin for one test.

There is no cri-api package in Debian: cri.proto beside this file declares the subset the tests
use. compile_proto() runs grpc_tools.protoc (python3-grpc-tools) on it into a descriptor set in the
test's tree; CriClient builds the message classes from that descriptor set and calls the methods
through grpc's generic unary-unary stubs (python3-grpcio) over the daemon's unix socket, so no
generated Python module is written or imported.

The plugin runs CNI inside containerd with the conf_dir/bin_dir given here, attaching up to
max_conf_num networks (as eth0, eth1, …, concurrently), with the kubelet's CNI_ARGS
(K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID) built from the sandbox
metadata. StopPodSandbox DELs with the sandbox's netns; RemovePodSandbox DELs once more without
one. Its sandbox ("pause") image comes from rootfs.oci_archive through `ctr images import`.
"""
import os

import grpc
from google.protobuf import message_factory

from harness.proto import compile_descriptor_set, message_pool

PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cri.proto")
CRI_NAMESPACE = "k8s.io"
SANDBOX_IMAGE = "manifold.test/sandbox:1"
SERVICES = ("runtime.v1.RuntimeService", "runtime.v1.ImageService")
# NamespaceMode values.
POD, CONTAINER = 0, 1


def plugin_config(cni_conf_dir, cni_bin_dir, max_conf_num):
    """The TOML of the CRI plugin: our sandbox image, runc, the native snapshotter (no overlay
    mounts), no lowering of oom_score_adj (the sandbox lacks CAP_SYS_RESOURCE), no AppArmor
    profile loading (a machine-wide change), the test's CNI directories."""
    cri = '[plugins."io.containerd.grpc.v1.cri"'
    return "\n".join([
        cri + "]",
        '  sandbox_image = "%s"' % SANDBOX_IMAGE,
        "  restrict_oom_score_adj = true",
        "  disable_apparmor = true",
        '  stream_server_address = "127.0.0.1"',
        '  stream_server_port = "0"',
        cri + ".containerd]",
        '  snapshotter = "native"',
        '  default_runtime_name = "runc"',
        cri + ".containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        cri + ".cni]",
        '  conf_dir = "%s"' % cni_conf_dir,
        '  bin_dir = "%s"' % cni_bin_dir,
        "  max_conf_num = %d" % max_conf_num,
        ""])


def compile_proto(out_dir):
    """Compiles cri.proto into a descriptor set in out_dir; returns its path."""
    return compile_descriptor_set(PROTO, out_dir, "cri.desc")


class CriClient:
    """Calls RuntimeService and ImageService methods by name with keyword fields."""

    def __init__(self, socket_path, descriptor_set):
        pool = message_pool(descriptor_set)
        factory = message_factory.MessageFactory(pool)
        self._pool = pool
        self._factory = factory
        self.channel = grpc.insecure_channel("unix://" + socket_path)
        self._methods = {}
        for service_name in SERVICES:
            for method in pool.FindServiceByName(service_name).methods:
                request = factory.GetPrototype(method.input_type)
                response = factory.GetPrototype(method.output_type)
                stub = self.channel.unary_unary(
                    "/%s/%s" % (service_name, method.name),
                    request_serializer=request.SerializeToString,
                    response_deserializer=response.FromString)
                self._methods[method.name] = (request, stub)

    def message(self, type_name, /, **fields):
        """A runtime.v1 message, e.g. message("PodSandboxMetadata", name="web")."""
        descriptor = self._pool.FindMessageTypeByName("runtime.v1." + type_name)
        return self._factory.GetPrototype(descriptor)(**fields)

    def call(self, method, /, timeout=120, **fields):
        """Calls method with a request built from fields; returns the response message."""
        request, stub = self._methods[method]
        return stub(request(**fields), timeout=timeout)

    def close(self):
        """Closes the channel."""
        self.channel.close()


def sandbox_config(client, name, namespace, uid, cgroup_parent, log_directory, dns_server):
    """The PodSandboxConfig a kubelet sends for a pod with its own network namespace. With a DNS
    config the plugin writes the sandbox's resolv.conf instead of copying the machine's (which may
    be a link into the machine's /run, not visible in the test's mount namespace)."""
    namespaces = client.message("NamespaceOption", network=POD, pid=CONTAINER, ipc=POD)
    security = client.message("LinuxSandboxSecurityContext", namespace_options=namespaces)
    return client.message(
        "PodSandboxConfig", hostname=name, log_directory=log_directory,
        dns_config=client.message("DNSConfig", servers=[dns_server]),
        metadata=client.message("PodSandboxMetadata", name=name, uid=uid, namespace=namespace),
        linux=client.message("LinuxPodSandboxConfig", cgroup_parent=cgroup_parent,
                             security_context=security))
