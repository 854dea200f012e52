#!/usr/bin/env bash
# manifold demo: attach one network namespace to three networks through the real libcni runtime
# library, show what the runtime got back and what the namespace looks like, then detach it.
#
#   eth0  cluster network: bridge + host-local (192.0.2.0/24, default route)
#   net1  data network:    macvlan on a veth, static 198.51.100.10/24
#   net2  storage network: conflist macvlan + tuning (static 203.0.113.10/24, MAC set by tuning)
#
# Everything happens inside namespaces this script creates (a "node" standing in for the host, and
# a "pod"), with addresses from the documentation ranges; all of it is removed at the end.
# Run as root on Debian 12:  bash examples/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash test/install-deps.sh >/dev/null
echo "== building manifold (Release) and the libcni driver"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "${MANIFOLD_JOBS:-2}" --target manifold cni_driver >/dev/null
bin=$(pwd)/build/release/manifold
driver=$(pwd)/build/release/test/integration/driver

node=mfdemo-node-$$
pod=mfdemo-pod-$$
work=$(mktemp -d /tmp/manifold-demo.XXXXXX)
cleanup() {
  ip netns del "$pod" 2>/dev/null || true
  ip netns del "$node" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$node"
ip netns add "$pod"
ip -n "$node" link set lo up
ip -n "$node" link add mfdata0 type veth peer name mfdata0p
ip -n "$node" link add mfstor0 type veth peer name mfstor0p
for l in mfdata0 mfdata0p mfstor0 mfstor0p; do ip -n "$node" link set "$l" up; done

mkdir -p "$work/bin" "$work/net.d" "$work/ipam"
ln -s "$bin" "$work/bin/manifold"
cat > "$work/net.d/00-manifold.conf" <<CONF
{
  "cniVersion": "1.0.0",
  "name": "manifold-demo",
  "type": "manifold",
  "cniDir": "$work/cache",
  "logFile": "$work/manifold.log",
  "logLevel": "verbose",
  "logToStderr": false,
  "delegates": [
    {"cniVersion": "1.0.0", "name": "cluster", "type": "bridge", "bridge": "mfdemobr0",
     "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "subnet": "192.0.2.0/24", "dataDir": "$work/ipam",
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"cniVersion": "1.0.0", "name": "data", "type": "macvlan", "master": "mfdata0", "mode": "bridge",
     "ipam": {"type": "static", "addresses": [{"address": "198.51.100.10/24"}],
              "routes": [{"dst": "100.64.0.0/16", "gw": "198.51.100.1"}]}},
    {"cniVersion": "1.0.0", "name": "storage", "plugins": [
      {"type": "macvlan", "master": "mfstor0", "mode": "bridge",
       "ipam": {"type": "static", "addresses": [{"address": "203.0.113.10/24"}]}},
      {"type": "tuning", "mac": "02:00:5e:10:00:2a"}]}
  ]
}
CONF

run_driver() {
  ip netns exec "$node" env NETCONFPATH="$work/net.d" CNI_PATH="$work/bin:/usr/lib/cni" \
    CNI_CACHE_DIR="$work/libcni" CNI_CONTAINERID=demo-pod "$driver" "$@" manifold-demo "/var/run/netns/$pod"
}

echo "== CNI ADD through libcni: the result the runtime parses"
run_driver add
echo
echo "== ip addr in the pod namespace"
ip -n "$pod" addr
echo
echo "== routes in the pod namespace"
ip -n "$pod" route
echo
echo "== CHECK of every attachment"
run_driver check && echo "CHECK ok"
echo "== DEL, twice (DEL is idempotent)"
run_driver del && run_driver del && echo "DEL ok"
echo "== links left in the pod namespace:"
ip -n "$pod" -br link
echo "== host-local reservations left: $(find "$work/ipam" -type f ! -name 'lock' ! -name 'last_reserved_ip*' | wc -l)"
echo "== cache entries left: $(find "$work/cache" -name '*.json' 2>/dev/null | wc -l)"
