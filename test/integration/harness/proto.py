"""Protocol Buffers for the tests' gRPC peers (the CRI client, the kubelet PodResources double)
without generated Python modules: compile_descriptor_set runs grpc_tools.protoc
(python3-grpc-tools) on a .proto into a descriptor set, and message_pool loads that set into a
descriptor pool from which message classes are built (google.protobuf.message_factory)."""
import os
import subprocess
import sys

from google.protobuf import descriptor_pb2, descriptor_pool


def compile_descriptor_set(proto, out_dir, name):
    """Compiles the file `proto` into `<out_dir>/<name>`; returns that path."""
    out = os.path.join(out_dir, name)
    proc = subprocess.run([sys.executable, "-m", "grpc_tools.protoc",
                           "--proto_path=" + os.path.dirname(proto),
                           "--descriptor_set_out=" + out, os.path.basename(proto)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("grpc_tools.protoc failed: " + proc.stdout + proc.stderr)
    return out


def message_pool(descriptor_set):
    """A DescriptorPool holding every file of the descriptor set at `descriptor_set`."""
    with open(descriptor_set, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
    pool = descriptor_pool.DescriptorPool()
    for file_proto in files:
        pool.Add(file_proto)
    return pool
