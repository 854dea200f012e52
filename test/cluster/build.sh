#!/usr/bin/env bash
# Builds the test node's binaries from the pinned wrapper modules in modules/ and prints the
# directory that holds them: kube-node (one executable for kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy and kubectl, with a link of each name), etcd, and the
# reference CNI plugins in cni/. The result is cached per machine under
# $MANIFOLD_CLUSTER_CACHE (default /var/cache/manifold-cluster)/<key>, the key a hash of the modules
# and of this script, so a warm run prints the directory without running Go at all. Go is
# /usr/local/go/bin/go (Debian's 1.19 may come first on PATH), CGO is off, -trimpath, no symbol
# tables (-s -w: a smaller link), and the modules are read-only: pin.sh alone changes them.
#   usage: build.sh            build if needed, print the bin directory
#          build.sh --download  only fetch the modules the build needs (I/O; CI overlaps it with
#                               the C++ build)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
go=/usr/local/go/bin/go
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
cache_root=${MANIFOLD_CLUSTER_CACHE:-/var/cache/manifold-cluster}
export GOCACHE=${MANIFOLD_CLUSTER_GOCACHE:-$cache_root/go-build}
k8s_tags=selinux,notest,grpcnotrace
plugins=(ipam/host-local ipam/static main/bridge main/host-device main/loopback main/macvlan
         meta/portmap meta/tuning)
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

# The node's own modules only: the scenarios' extra ones (build-module.sh) have keys of their own.
key=$(cd "$here" && cat build.sh modules/{kubernetes,etcd,plugins}/{go.mod,go.sum,*.go} |
  sha256sum | cut -c1-16)
out=$cache_root/$key

module_version() {
  awk -v m="$2" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m { print $2 }' "$here/modules/$1/go.mod" | tail -1
}
plugin_packages() {
  local p
  for p in "${plugins[@]}"; do echo "github.com/containernetworking/plugins/plugins/$p"; done
}

if [[ ${1:-} == --download && -f $out/complete ]]; then
  exit 0  # built already: nothing to fetch
elif [[ ${1:-} == --download ]]; then
  (cd "$here/modules/kubernetes" && "$go" list -deps -tags "$k8s_tags" . >/dev/null)
  (cd "$here/modules/etcd" && "$go" list -deps . >/dev/null)
  (cd "$here/modules/plugins" && "$go" list -deps $(plugin_packages) >/dev/null)
  exit 0
fi

if [[ -f $out/complete ]]; then
  echo "$out/bin"
  exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if [[ -f $out/complete ]]; then
  echo "$out/bin"
  exit 0
fi
tmp=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin/cni"

k8s=$(module_version kubernetes k8s.io/kubernetes)
minor=${k8s#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $p.gitVersion=$k8s -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
start=$SECONDS
(cd "$here/modules/kubernetes" &&
  "$go" build -trimpath -tags "$k8s_tags" -ldflags "$ldflags" -o "$tmp/bin/kube-node" .)
for c in "${components[@]}"; do ln -s kube-node "$tmp/bin/$c"; done
echo "build.sh: kube-node $k8s built in $((SECONDS - start)) s" >&2

start=$SECONDS
(cd "$here/modules/etcd" && "$go" build -trimpath -ldflags "-s -w" -o "$tmp/bin/etcd" .)
echo "build.sh: etcd $(module_version etcd go.etcd.io/etcd/server/v3) built in $((SECONDS - start)) s" >&2

start=$SECONDS
cni=$(module_version plugins github.com/containernetworking/plugins)
(cd "$here/modules/plugins" && "$go" build -trimpath -o "$tmp/bin/cni/" \
  -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$cni" \
  $(plugin_packages))
echo "build.sh: CNI plugins $cni built in $((SECONDS - start)) s" >&2

touch "$tmp/complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out/bin"
