#!/usr/bin/env bash
# manifold demo: what manifold does for one pod on a Kubernetes node, without a cluster. A local
# API server double plays the cluster (test/integration/apiserver), the real libcni runtime library
# plays containerd/CRI-O (test/driver), and two namespaces play the node and the pod:
#
#   NADs demo/data     macvlan on a veth, host-local 198.51.100.0/24 (gw .1), sourceRouting on
#        demo/storage  conflist macvlan + tuning, static 203.0.113.10/24, MAC set by tuning
#   pod  demo/web      k8s.v1.cni.cncf.io/networks (set with kubectl annotate) selects both; the
#                      data element's cni-args turn on the mesh redirect (ports 4143/4140)
#   manifold           cluster network bridge + host-local 192.0.2.0/24 as eth0, kubeconfig from
#                      the double, run by libcni with the kubelet's CNI_ARGS
#
# It shows the result the runtime got, the pod's addresses and routes, its network-status as
# `kubectl get pod -o yaml` shows it, manifold's API requests, the source-routing rule and table and
# the mesh's nat rules of the scoped network; then CHECK, DEL twice, and that nothing is left.
# Everything lives in namespaces and a temp dir made here, removed on exit (even on failure), with
# documentation addresses only. Run as root on Debian 12:  bash examples/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

bash test/install-deps.sh >/dev/null
echo "== building manifold (Release) and the libcni driver"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "${MANIFOLD_JOBS:-2}" --target manifold cni_driver >/dev/null
bin=$repo/build/release/manifold
driver=$repo/build/release/test/integration/driver
apidir=$repo/test/integration/apiserver

node=mfdemo-node-$$
pod=mfdemo-pod-$$
work=$(mktemp -d /tmp/manifold-demo.XXXXXX)
api_pid=
cleanup() {
  if [[ -n $api_pid ]]; then
    kill "$api_pid" 2>/dev/null || true
    wait "$api_pid" 2>/dev/null || true
  fi
  ip netns del "$pod" 2>/dev/null || true
  ip netns del "$node" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

section() { printf '\n== %s\n' "$*"; }
# A CNI result on stdin, printed as one line per top-level key and per list element.
result_lines() {
  python3 -c '
import json, sys
for key, value in json.load(sys.stdin).items():
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        name = key if i == 0 else ""
        label = f"[{i}] " if isinstance(value, list) else ""
        text = item if isinstance(item, str) else json.dumps(item, separators=(",", ":"))
        print(f"{name:<11} {label}{text}")'
}
in_node() { ip netns exec "$node" "$@"; }
ctl() { in_node python3 "$apidir/ctl.py" "$work/api" "$@"; }
# manifold's requests in the double's log since the last call (kubectl's are another user's).
seen_requests=0
new_requests() {
  local all count
  all=$(ctl requests --user system:serviceaccount:kube-system:manifold)
  count=$(grep -c . <<<"$all" || true)
  if ((count == seen_requests)); then
    echo "   (no API requests)"
  else
    tail -n +"$((seen_requests + 1))" <<<"$all" | sed 's/^/   /'
  fi
  seen_requests=$count
}
# The pod's nat rules in manifold's CNIMESH chains, from whichever iptables backend holds them.
mesh_rules() {
  local save
  for save in iptables-save iptables-legacy-save; do
    if ip netns exec "$pod" "$save" -t nat 2>/dev/null | grep CNIMESH; then
      return 0
    fi
  done
  return 1
}
kubectl_admin() {
  in_node kubectl --kubeconfig "$work/api/admin.kubeconfig" --cache-dir "$work/kube-cache" "$@"
}

# The node: loopback for the API server double, one veth pair per macvlan master.
ip netns add "$node"
ip netns add "$pod"
ip -n "$node" link set lo up
ip -n "$node" link add mfdata0 type veth peer name mfdata0p
ip -n "$node" link add mfstor0 type veth peer name mfstor0p
for l in mfdata0 mfdata0p mfstor0 mfstor0p; do ip -n "$node" link set "$l" up; done
mkdir -p "$work/bin" "$work/net.d" "$work/ipam"
ln -s "$bin" "$work/bin/manifold"

# The API server double listens on the node's 127.0.0.1 and enforces manifold's RBAC; it prints
# one READY line once it serves (read through a FIFO, so no polling). `ip netns exec` execs it,
# so $! is the server's own PID, which the cleanup stops.
section "cluster: API server double (manifold's RBAC enforced), NADs and a pod"
mkfifo "$work/api.ready"
ip netns exec "$node" python3 "$apidir/server.py" --dir "$work/api" --rbac manifold \
  >"$work/api.ready" 2>"$work/api.log" &
api_pid=$!
if ! read -r _ <"$work/api.ready"; then
  echo "the API server double did not start:" >&2
  cat "$work/api.log" >&2
  exit 1
fi

cat > "$work/nad-data.json" <<JSON
{"cniVersion": "1.0.0", "name": "data", "type": "macvlan", "master": "mfdata0", "mode": "bridge",
 "ipam": {"type": "host-local", "dataDir": "$work/ipam",
          "ranges": [[{"subnet": "198.51.100.0/24", "rangeStart": "198.51.100.10",
                       "gateway": "198.51.100.1"}]]},
 "sourceRouting": {"enabled": true}}
JSON
cat > "$work/nad-storage.json" <<'JSON'
{"cniVersion": "1.0.0", "name": "storage", "plugins": [
  {"type": "macvlan", "master": "mfstor0", "mode": "bridge",
   "ipam": {"type": "static", "addresses": [{"address": "203.0.113.10/24"}]}},
  {"type": "tuning", "mac": "02:00:5e:10:00:2a"}]}
JSON
ctl add-nad demo data "$work/nad-data.json"
ctl add-nad demo storage "$work/nad-storage.json"
uid=$(cat /proc/sys/kernel/random/uuid)
ctl add-pod demo web --uid "$uid"
mesh='{"enabled": true, "inboundPort": 4143, "outboundPort": 4140}'
data='{"name": "data", "interface": "net1", "cni-args": {"mesh": '"$mesh"'}}'
networks="[$data, {\"name\": \"storage\", \"interface\": \"net2\"}]"
kubectl_admin annotate pod web -n demo --overwrite "k8s.v1.cni.cncf.io/networks=$networks"
kubectl_admin get net-attach-def -n demo
kubectl_admin get pods -n demo

cat > "$work/net.d/00-manifold.conf" <<CONF
{
  "cniVersion": "1.0.0",
  "name": "manifold-demo",
  "type": "manifold",
  "kubeconfig": "$work/api/kubeconfig",
  "binDir": "/usr/lib/cni",
  "cniDir": "$work/cache",
  "logFile": "$work/manifold.log",
  "logLevel": "verbose",
  "logToStderr": false,
  "delegates": [
    {"cniVersion": "1.0.0", "name": "cluster", "type": "bridge", "bridge": "mfdemobr0",
     "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "subnet": "192.0.2.0/24", "dataDir": "$work/ipam",
              "routes": [{"dst": "0.0.0.0/0"}]}}
  ]
}
CONF

# What the kubelet's runtime passes for a pod sandbox.
cid=demo-$$
cni_args="IgnoreUnknown=1;K8S_POD_NAMESPACE=demo;K8S_POD_NAME=web"
cni_args+=";K8S_POD_INFRA_CONTAINER_ID=$cid;K8S_POD_UID=$uid"
run_driver() {
  in_node env NETCONFPATH="$work/net.d" CNI_PATH="$work/bin:/usr/lib/cni" \
    CNI_CACHE_DIR="$work/libcni" CNI_CONTAINERID="$cid" CNI_ARGS="$cni_args" \
    "$driver" "$@" manifold-demo "/var/run/netns/$pod"
}

section "CNI ADD through libcni, with the kubelet's CNI_ARGS (pod demo/web, uid $uid)"
echo "-- the result the runtime got (the cluster network's; one JSON value per line):"
run_driver add | result_lines

section "the pod namespace"
ip -n "$pod" -br addr
echo "-- main routing table:"
ip -n "$pod" route

section "network-status, as kubectl get pod web -n demo -o yaml shows it"
kubectl_admin get pod web -n demo -o yaml |
  awk '/^  annotations:/ {on=1} on && /^  [a-zA-Z]/ && !/^  annotations:/ {on=0} on'

section "what manifold asked the API server (the double's request log: method, path, status)"
new_requests

section "network scoping of demo/data (net1): source routing"
ip -n "$pod" rule
table=$(ip -n "$pod" rule | awk '$2 == "from" && $3 != "all" && $4 == "lookup" {print $5; exit}')
echo "-- table $table: a copy of net1's routes + a default via its gateway (main table untouched)"
ip -n "$pod" route show table "$table"

section "network scoping of demo/data (net1): mesh redirect (iptables-save -t nat, CNIMESH only)"
mesh_rules || echo "(none)"

section "CHECK of every attachment, then DEL twice"
run_driver check && echo "CHECK ok"
new_requests
run_driver del && echo "first DEL ok (from manifold's cache)"
new_requests
run_driver del && echo "second DEL ok (no cache left: manifold rebuilds the delegates from the" \
  "pod and NADs and DELs again, so no IP can leak)"
new_requests

section "what is left"
echo "-- links in the pod namespace:"
ip -n "$pod" -br link
echo "-- source-routing rules: $(ip -n "$pod" rule | grep -c 'lookup [0-9]' || true)"
echo "-- CNIMESH rules: $(mesh_rules | wc -l)"
# The cache holds nothing of the pod any more; .tls/session is the node's stored TLS session (kept
# on purpose: the next call resumes it instead of a full handshake).
echo "-- manifold cache files: $(find "$work/cache" -path "$work/cache/.tls" -prune -o -type f -print 2>/dev/null | wc -l)"
echo "-- stored TLS sessions (node state, not the pod's): $(find "$work/cache/.tls" -type f 2>/dev/null | wc -l)"
reservations=$(find "$work/ipam" -type f ! -name lock ! -name 'last_reserved_ip*' | wc -l)
echo "-- host-local reservations: $reservations"
