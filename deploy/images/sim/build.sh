#!/usr/bin/env bash
# Build the simulator lane image offline and print its pinned reference.
#   debootstrap (cached) -> docker import (base) -> docker build (adds simulator/)
#   -> docker push to the local registry -> repo@sha256:<digest> on stdout.
# Needs: root, debootstrap, a Docker daemon, a registry at $FACEOFF_REGISTRY.
# Reused by content: a stamp keyed on the sha256 of the inputs (this script, the Dockerfile,
# simulator/) holds the pushed reference, printed at once while the registry serves it and
# the daemon has it. One build per host at a time (flock): a caller that finds one under way
# (the tests' fixture beside .ci/run's build) waits for it and then reuses it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
registry=${FACEOFF_REGISTRY:-127.0.0.1:5000}
repo="$registry/faceoff/sim"
base=faceoff/sim-base:bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
build="$here/build"
cache=${FACEOFF_IMAGE_CACHE:-/var/cache/faceoff/images}
mkdir -p "$build" "$cache"
exec 9>"$cache/sim.lock"
flock 9

inputs=$( (cd "$root" && cat "$here/build.sh" "$here/Dockerfile" \
  && find simulator -type f ! -path '*__pycache__*' -print0 | sort -z | xargs -0 sha256sum) \
  | sha256sum | cut -c1-16)
stamp="$cache/sim-$inputs.ref"
if [ -f "$stamp" ] && docker image inspect "$(cat "$stamp")" >/dev/null 2>&1 \
  && curl -fs -o /dev/null --head "http://$registry/v2/faceoff/sim/manifests/$(cut -d@ -f2 "$stamp")"; then
  cat "$stamp"
  exit 0
fi

if ! docker image inspect "$base" >/dev/null 2>&1; then
  if [ ! -f "$build/rootfs.tar" ]; then
    rm -rf "$build/rootfs"
    debootstrap --variant=minbase \
      --include=python3,python3-aiohttp,python3-prometheus-client \
      bookworm "$build/rootfs" "$mirror" >"$build/debootstrap.log" 2>&1 \
      || { tail -20 "$build/debootstrap.log" >&2; exit 1; }
    tar -C "$build/rootfs" -cf "$build/rootfs.tar.part" . && mv "$build/rootfs.tar.part" "$build/rootfs.tar"
    rm -rf "$build/rootfs"
  fi
  docker import "$build/rootfs.tar" "$base" >&2
fi

context="$build/context"
rm -rf "$context" && mkdir -p "$context"
cp "$here/Dockerfile" "$context/"
(cd "$root" && tar --exclude=__pycache__ -cf - simulator) | tar -C "$context" -xf -
DOCKER_BUILDKIT=0 docker build -q -t "$repo:latest" "$context" >&2
docker push -q "$repo:latest" >&2
ref=$(docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$repo:latest" \
  | grep -m1 "^$repo@sha256:")
echo "$ref" >"$stamp.part" && mv "$stamp.part" "$stamp"
echo "$ref"
