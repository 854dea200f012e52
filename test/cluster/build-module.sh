#!/usr/bin/env bash
# Builds one of the scenarios' extra wrapper modules in modules/ and prints the directory that
# holds its binaries, cached per machine like build.sh's (same cache root and Go build cache) but
# keyed by that module alone (its go.mod, go.sum and Go files, and this script), so a new pin of
# one never rebuilds the node:
#   multus        Multus CNI thin from gopkg.in/k8snetworkplumbingwg/multus-cni.v4: multus,
#                 install_multus, thin_entrypoint and passthru, laid out as Multus's image holds
#                 them (the migration scenario builds that image from them), and the thin
#                 DaemonSet manifest of the same version (multus-daemonset.yml)
#   deviceplugin  manifold-test-device-plugin, the device plugin of the devices scenario
#   usage: build-module.sh MODULE             build if needed, print the bin directory
#          build-module.sh MODULE --download  only fetch the modules the build needs
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
go=/usr/local/go/bin/go
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
cache_root=${MANIFOLD_CLUSTER_CACHE:-/var/cache/manifold-cluster}
export GOCACHE=${MANIFOLD_CLUSTER_GOCACHE:-$cache_root/go-build}
module=${1:?usage: build-module.sh MODULE [--download]}
dir=$here/modules/$module
[[ -f $dir/go.mod ]] || { echo "build-module.sh: no module $dir" >&2; exit 2; }

ldflags="-s -w"
case $module in
  multus)
    version=$(awk '$1 == "require" && $2 ~ /multus-cni/ { print $3 }' "$dir/go.mod")
    pkg=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
    packages=("$pkg/cmd/multus" "$pkg/cmd/install_multus" "$pkg/cmd/thin_entrypoint"
              "$pkg/cmd/passthru-cni")
    ldflags+=" -X $pkg/pkg/multus.version=$version -X $pkg/pkg/multus.gitTreeState=clean"
    ldflags+=" -X $pkg/pkg/multus.releaseStatus=released";;
  deviceplugin)
    packages=(.);;
  *) echo "build-module.sh: unknown module $module" >&2; exit 2;;
esac

key=$(cd "$dir" && cat "$here/build-module.sh" go.mod go.sum *.go | sha256sum | cut -c1-16)
out=$cache_root/$module-$key

if [[ ${2:-} == --download ]]; then
  [[ -f $out/complete ]] || (cd "$dir" && "$go" list -deps "${packages[@]}" >/dev/null)
  exit 0
fi
if [[ -f $out/complete ]]; then
  echo "$out/bin"
  exit 0
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-$module"
flock 9
if [[ -f $out/complete ]]; then
  echo "$out/bin"
  exit 0
fi
tmp=$(mktemp -d "$cache_root/.build-$module.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
start=$SECONDS
(cd "$dir" && "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/bin/" "${packages[@]}")
if [[ $module == multus ]]; then
  mv "$tmp/bin/passthru-cni" "$tmp/bin/passthru"  # the name Multus's build gives it
  source_dir=$(cd "$dir" && "$go" list -m -f '{{.Dir}}' gopkg.in/k8snetworkplumbingwg/multus-cni.v4)
  cp "$source_dir/deployments/multus-daemonset.yml" "$tmp/bin/"
else
  mv "$tmp/bin/deviceplugin" "$tmp/bin/manifold-test-device-plugin"
fi
echo "build-module.sh: $module built in $((SECONDS - start)) s" >&2
touch "$tmp/complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out/bin"
