"""A kubelet double for manifold's integration tests (Python 3; python3-grpcio, python3-grpc-tools).

podresources_double.py  PodResourcesDouble: a real gRPC server of the kubelet's PodResources API
                        (v1.PodResourcesLister/List) on a unix socket, answering configured
                        allocations encoded from lib/kubelet/podresources.proto, with fault modes
plain_socket.py         the non-gRPC listeners of the fault modes (reset, http-garbage, silent)
call_log.py             the thread-safe log of the calls and connections the double received
test_podresources_double.py  the double's own tests (no root needed)
test_fake_sriov.py      tests of the fake-sriov delegate (test/integration/plugins; needs root)
"""
