#!/usr/bin/env bash
# Build the vLLM CPU lane image offline and print its pinned reference (repo@sha256:…).
#   a debootstrap base (python3, libnuma1) + the site-packages of deploy/vllm/install.sh's venv
#   -> docker build -> docker push to the local registry.
# ~3.4 GB of packages: about ten minutes and 7 GB of disk here, which is why CI does not
# build it on every run (see docs/testing.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
registry=${FACEOFF_REGISTRY:-127.0.0.1:5000}
repo="$registry/faceoff/vllm-cpu"
base=faceoff/vllm-base:bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
build="$here/build"
mkdir -p "$build"
if ! docker image inspect "$base" >/dev/null 2>&1; then
  if [ ! -f "$build/rootfs.tar" ]; then  # vLLM's kernels link libnuma; Debian's python3 is 3.11
    rm -rf "$build/rootfs"
    debootstrap --variant=minbase --include=python3,libnuma1 \
      bookworm "$build/rootfs" "$mirror" >"$build/debootstrap.log" 2>&1 \
      || { tail -20 "$build/debootstrap.log" >&2; exit 1; }
    tar -C "$build/rootfs" -cf "$build/rootfs.tar.part" . && mv "$build/rootfs.tar.part" "$build/rootfs.tar"
    rm -rf "$build/rootfs"
  fi
  docker import "$build/rootfs.tar" "$base" >&2
fi
venv=$(bash "$root/deploy/vllm/install.sh")
context="$build/context"
rm -rf "$context" && mkdir -p "$context"
cp "$here/Dockerfile" "$root/deploy/vllm/vllm_cli.py" "$context/"
site=$(echo "$venv"/lib/python3.11/site-packages)
cp -a "$site" "$context/site-packages"
DOCKER_BUILDKIT=0 docker build -q -t "$repo:0.32.0" "$context" >&2
rm -rf "$context"
docker push -q "$repo:0.32.0" >&2
docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$repo:0.32.0" \
  | grep -m1 "^$repo@sha256:"
