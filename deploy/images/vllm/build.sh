#!/usr/bin/env bash
# Build the vLLM CPU lane image once per host, push it to the local registry and print its
# pinned reference (repo@sha256:…).
#
# The image is one layer: a debootstrap rootfs (python3, libnuma1: vLLM's CPU kernels link
# it; Debian's python3 is 3.11 like the venv's, so its cp311 wheels load unchanged) and the
# site-packages of deploy/vllm/install.sh's venv, written by one tar. The layer goes to the
# registry uncompressed over its HTTP API (deploy/images/registry_push.py: `docker push`
# gzips 3.6 GB on one core, most of a fresh host's build, for a registry on loopback), and
# `docker pull` by digest gives the daemon the image with its RepoDigests. No entrypoint: an
# arm's command names the engine (`python3 /opt/vllm/vllm_cli.py serve …`), so it can also
# wrap it (the tests confine it to one core with taskset, as they do the process lanes).
#
# Reused by digest, as install.sh reuses its venv: a stamp keyed on the sha256 of the inputs
# (this script, the pusher, the lock, install.sh, the CLI shim) holds the pushed reference;
# while the registry still serves that manifest nothing is built or pushed, and the daemon
# pulls it if it lost it. A changed input builds a new image. One build per host at a time
# (flock), so concurrent checkouts and the tests' fixture wait for the first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
kit="$root/deploy/vllm"
registry=${FACEOFF_REGISTRY:-127.0.0.1:5000}
repo="$registry/faceoff/vllm-cpu"
cache=${FACEOFF_IMAGE_CACHE:-/var/cache/faceoff/images}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache"
exec 9>"$cache/vllm-cpu.lock"
flock 9

inputs=$(cat "$here/build.sh" "$here/../registry_push.py" "$kit/requirements-lock.txt" \
  "$kit/install.sh" "$kit/vllm_cli.py" \
  | sha256sum | cut -c1-16)
stamp="$cache/vllm-cpu-$inputs.ref"

took() {  # took WHAT: how long WHAT took, on stderr (CI's log shows where the minutes go)
  echo "vllm image: $1 in $((SECONDS - mark)) s" >&2
  mark=$SECONDS
}

served() {  # served REPO@DIGEST: the registry still has that manifest
  local name=${1#*/} digest=${1#*@}
  curl -fs -o /dev/null --head \
    -H "Accept: application/vnd.oci.image.manifest.v1+json" \
    -H "Accept: application/vnd.docker.distribution.manifest.v2+json" \
    "http://$registry/v2/${name%@*}/manifests/$digest"
}

if [ -f "$stamp" ]; then
  ref=$(cat "$stamp")
  if [[ $ref == "$repo@sha256:"* ]] && served "$ref"; then
    docker image inspect "$ref" >/dev/null 2>&1 || docker pull -q "$ref" >&2
    echo "vllm image: reused, the registry still serves it" >&2
    echo "$ref"
    exit 0
  fi
fi

mark=$SECONDS
rootfs="$cache/vllm-rootfs-bookworm"
if [ ! -d "$rootfs" ]; then
  rm -rf "$rootfs.part"
  debootstrap --variant=minbase --include=python3,libnuma1 \
    bookworm "$rootfs.part" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
  rm -rf "$rootfs.part"/var/cache/apt/archives/*.deb "$rootfs.part"/var/lib/apt/lists/*
  mv "$rootfs.part" "$rootfs"
  took "debootstrap"
fi
venv=$(bash "$kit/install.sh")
layer="$cache/vllm-cpu-$inputs.tar"
trap 'rm -f "$layer"' EXIT  # the registry keeps the layer; the host needs no second copy
tar -c --numeric-owner \
  --transform 's,^site-packages,opt/vllm/site-packages,;s,^vllm_cli\.py$,opt/vllm/vllm_cli.py,' \
  -C "$rootfs" . -C "$venv/lib/python3.11" site-packages -C "$kit" vllm_cli.py >"$layer"
took "layer ($(stat -c %s "$layer" | numfmt --to=si)B)"
ref=$(python3 "$here/../registry_push.py" "$layer" "$registry" faceoff/vllm-cpu "0.32.0-$inputs" \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env PYTHONPATH=/opt/vllm/site-packages --env HF_HUB_OFFLINE=1 --env TRANSFORMERS_OFFLINE=1 \
  --env VLLM_NO_USAGE_STATS=1 --env DO_NOT_TRACK=1 --env VLLM_CPU_KVCACHE_SPACE=1 \
  --cmd python3 /opt/vllm/vllm_cli.py)
took "upload, uncompressed"
docker pull -q "$ref" >&2
took "pull"
echo "$ref" >"$stamp.part" && mv "$stamp.part" "$stamp"
echo "$ref"
