#!/usr/bin/env bash
# Installs everything manifold needs to build and to run its whole test suite on Debian 12:
# toolchain, libraries, Go + libcni sources for the runtime driver, the CNI plugins used as
# delegates, the network tools, clang-format (the style check), kubectl, and the real runtimes of test_runtime_*.py (podman,
# containerd, runc, busybox-static for their rootfs, python3-grpcio + python3-grpc-tools for the CRI
# client). Idempotent and non-interactive: when every package is already installed it does not touch
# apt at all. Must run as root (it does in CI).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libnl-3-dev libnl-route-3-dev nlohmann-json3-dev libcli11-dev catch2 libboost-dev libssl-dev
  libyaml-cpp-dev zlib1g-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
  containernetworking-plugins golang-go golang-github-appc-cni-dev
  iptables iproute2 python3 openssl clang libclang-rt-14-dev lld clang-format util-linux procps valgrind strace
  podman containerd runc busybox-static python3-grpcio python3-grpc-tools
)
# kubectl (the API server double's tests and the demo run it): Debian's kubernetes-client, unless a
# kubectl is already on PATH; another package (e.g. Google Cloud SDK's kubectl) may own
# /usr/bin/kubectl, and kubernetes-client would conflict with it.
if ! command -v kubectl >/dev/null 2>&1; then
  packages+=(kubernetes-client)
fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]}) and not root: run as root" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q </dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
