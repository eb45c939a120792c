#!/usr/bin/env bash
# Container images with no registry and no Docker engine: a root directory
# packed as one tar layer, its config and manifest, written as an OCI image
# layout in one tar archive (blobs named by their sha256) that
# `ctr images import` and `docker load`-compatible tools read.
#
#   scripts/oci-image.sh rackbench OUT.tar [NAME] [BINARY]
#       rackbench (default target/release/rackbench) and the shared
#       libraries ldd lists for it, on an otherwise empty root, run as user
#       10001 (numeric, for the Job's runAsNonRoot); NAME default
#       rackbench:dev
#   scripts/oci-image.sh pause OUT.tar NAME PAUSE_BINARY
#       the pause container (a static binary) as /pause, user 65535
#
# The archive is the same bytes for the same inputs (files sorted, owner
# 0, mtime 0), so its digest names what is in it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
home=$(dirname "$here")

die() { echo "oci-image: $*" >&2; exit 1; }

sha() { sha256sum "$1" | cut -d' ' -f1; }

# pack ROOT OUT NAME CONFIG_JSON: the layer from ROOT, then the config
# (CONFIG_JSON is the "config" object), manifest and index.json.
pack() {
  local root=$1 out=$2 name=$3 config=$4 work
  work=$(mktemp -d)
  mkdir -p "$work/blobs/sha256"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -C "$root" -cf "$work/layer.tar" .
  local layer layer_size
  layer=$(sha "$work/layer.tar"); layer_size=$(stat -c %s "$work/layer.tar")
  mv "$work/layer.tar" "$work/blobs/sha256/$layer"
  printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"scripts/oci-image.sh"}]}' \
    "$config" "$layer" > "$work/config.json"
  local cfg cfg_size
  cfg=$(sha "$work/config.json"); cfg_size=$(stat -c %s "$work/config.json")
  mv "$work/config.json" "$work/blobs/sha256/$cfg"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cfg" "$cfg_size" "$layer" "$layer_size" > "$work/manifest.json"
  local man man_size
  man=$(sha "$work/manifest.json"); man_size=$(stat -c %s "$work/manifest.json")
  mv "$work/manifest.json" "$work/blobs/sha256/$man"
  # A name without a registry is docker.io/library/NAME to the kubelet.
  local full=$name
  case "$name" in
    */*) case "${name%%/*}" in *.*|*:*|localhost) ;; *) full=docker.io/$name ;; esac ;;
    *) full=docker.io/library/$name ;;
  esac
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$man" "$man_size" "$full" "${name##*:}" > "$work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$work/oci-layout"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -C "$work" -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"
  rm -rf "$work"
  echo "oci-image: wrote $out: $full, manifest sha256:$man" >&2
}

rackbench_image() {
  local out=$1 name=${2:-rackbench:dev} bin=${3:-$home/target/release/rackbench} root
  [ -x "$bin" ] || die "no $bin: build it first (cargo build --release --locked)"
  root=$(mktemp -d); chmod 0755 "$root"
  mkdir -p "$root/usr/local/bin" "$root/etc" "$root/tmp"
  chmod 1777 "$root/tmp"
  install -m 0755 "$bin" "$root/usr/local/bin/rackbench"
  # The dynamic loader and every library ldd resolves, at the same paths.
  local lib
  for lib in $(ldd "$bin" | grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  printf 'root:x:0:0:root:/:/nonexistent\nrackbench:x:10001:10001::/tmp:/nonexistent\n' > "$root/etc/passwd"
  printf 'root:x:0:\nrackbench:x:10001:\n' > "$root/etc/group"
  pack "$root" "$out" "$name" \
    '{"User":"10001:10001","Env":["PATH=/usr/local/bin:/usr/bin:/bin"],"Entrypoint":["rackbench"],"Cmd":["--help"],"WorkingDir":"/tmp"}'
  rm -rf "$root"
}

pause_image() {
  local out=$1 name=$2 bin=$3 root
  [ -x "$bin" ] || die "no pause binary at $bin"
  root=$(mktemp -d); chmod 0755 "$root"
  install -m 0755 "$bin" "$root/pause"
  pack "$root" "$out" "$name" '{"User":"65535:65535","Entrypoint":["/pause"]}'
  rm -rf "$root"
}

case "${1:-}" in
  rackbench) [ $# -ge 2 ] || die "usage: $0 rackbench OUT.tar [NAME] [BINARY]"; shift; rackbench_image "$@" ;;
  pause) [ $# -eq 4 ] || die "usage: $0 pause OUT.tar NAME PAUSE_BINARY"; shift; pause_image "$@" ;;
  *) die "usage: $0 rackbench OUT.tar [NAME] [BINARY] | pause OUT.tar NAME PAUSE_BINARY" ;;
esac
