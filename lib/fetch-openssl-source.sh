#!/usr/bin/env bash
# Fetches Debian's OpenSSL source package (the one this machine's apt sources carry, patches
# applied) into DEST, for the static release binary's TLS-client build of OpenSSL (lib/openssl.cmake,
# -DMANIFOLD_OPENSSL_SOURCE=DEST). apt verifies what it downloads against the archive's signed
# Sources index. It works in a private apt state directory made from the machine's own `deb` sources
# turned into `deb-src` ones, so the machine's apt configuration and package lists are left exactly
# as they were. The newest version the mirror serves wins; if a version's files cannot be fetched,
# the next older one is tried. DEST/.manifold-source names what was fetched; a DEST that already
# holds the newest version the mirror serves is kept, an older one is replaced (so a rebuild after a
# security upload picks it up). Usage: fetch-openssl-source.sh DEST
set -euo pipefail

dest=${1:?usage: fetch-openssl-source.sh DEST}
held=
if [[ -f $dest/.manifold-source ]]; then
  held=$(sed -n 's/^openssl \([^ ]*\) .*/\1/p' "$dest/.manifold-source")
fi
for tool in apt-get apt-cache dpkg-source dpkg; do
  command -v "$tool" >/dev/null || { echo "fetch-openssl-source: $tool not found (Debian's apt and dpkg-dev are needed)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/manifold-openssl-src.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial" "$work/download"
# The machine's sources, as deb-src entries (deb822 files and one-line lists alike).
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] && sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$work/parts/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [[ -f $f ]] && sed -nE 's/^deb[[:space:]]+/deb-src /p' "$f" >> "$work/parts/machine.list"
done
apt_opts=(-o "Dir::Etc::sourcelist=/dev/null" -o "Dir::Etc::sourceparts=$work/parts"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root" -q)
apt-get "${apt_opts[@]}" update </dev/null >"$work/update.log" 2>&1 || {
  if [[ -n $held ]]; then
    echo "fetch-openssl-source: cannot read the source indices; keeping $dest ($(cat "$dest/.manifold-source"))" >&2
    exit 0
  fi
  cat "$work/update.log" >&2
  echo "fetch-openssl-source: cannot read the source indices of this machine's apt sources" >&2
  exit 1
}

# Every version the indices list, newest first (Debian's version order).
mapfile -t versions < <(apt-cache "${apt_opts[@]}" showsrc openssl 2>/dev/null | sed -n 's/^Version: //p')
sorted=()
for v in "${versions[@]}"; do
  i=0
  while ((i < ${#sorted[@]})) && dpkg --compare-versions "${sorted[i]}" gt "$v"; do i=$((i + 1)); done
  sorted=("${sorted[@]:0:i}" "$v" "${sorted[@]:i}")
done
((${#sorted[@]} > 0)) || { echo "fetch-openssl-source: no openssl source package in this machine's apt sources" >&2; exit 1; }

for v in "${sorted[@]}"; do
  if [[ -n $held ]] && dpkg --compare-versions "$v" le "$held"; then
    echo "fetch-openssl-source: $dest already holds $(cat "$dest/.manifold-source")"
    exit 0
  fi
  rm -rf "$work/download"/*
  if (cd "$work/download" && apt-get "${apt_opts[@]}" source --download-only "openssl=$v" </dev/null >"$work/source.log" 2>&1); then
    dsc=$(ls "$work/download"/openssl_*.dsc)
    dpkg-source -x "$dsc" "$work/tree" >"$work/unpack.log" 2>&1 || { cat "$work/unpack.log" >&2; exit 1; }
    echo "openssl $v (Debian source package)" > "$work/tree/.manifold-source"
    mkdir -p "$(dirname "$dest")"
    rm -rf "$dest"
    mv "$work/tree" "$dest"
    echo "fetch-openssl-source: $dest holds $(cat "$dest/.manifold-source")"
    exit 0
  fi
  echo "fetch-openssl-source: openssl $v could not be fetched; trying an older version" >&2
done
cat "$work/source.log" >&2
echo "fetch-openssl-source: no version of the openssl source package could be fetched (${sorted[*]})" >&2
exit 1
