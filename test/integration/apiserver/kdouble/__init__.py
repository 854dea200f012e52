"""kdouble: a local Kubernetes API server double for manifold's tests.

The package implements an HTTPS server that behaves like kube-apiserver for the handful of
resources manifold touches (pods, pods/status, NetworkAttachmentDefinitions, events, and DRA's
resource.k8s.io/v1 ResourceClaims and ResourceSlices: objects.py, dra.py), including
pod LIST and WATCH with selectors, bookmarks and a bounded history (list_options.py, watch.py,
watch_stream.py), with its own PKI, bearer-token and client-certificate authentication, real
`Status` error bodies, runtime fault injection (also into open watch streams) and a request log,
plus the discovery, Table output and PATCH an operator's kubectl needs (routes.py is the table of
served paths and verbs). `core.ApiServer` is the in-process entry
point; `server.py` runs it as a process and `apiserver_double.ApiServerDouble` drives that process
from tests.
"""
