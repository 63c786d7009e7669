#!/usr/bin/env bash
# Build the vLLM CPU lane image offline and print its pinned reference (repo@sha256:…).
#   the simulator's debootstrap base + the site-packages of deploy/vllm/install.sh's venv
#   -> docker build -> docker push to the local registry.
# ~3.4 GB of packages: about ten minutes and 7 GB of disk here, which is why CI does not
# build it on every run (see docs/lanes.md, "Real engines").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
registry=${FACEOFF_REGISTRY:-127.0.0.1:5000}
repo="$registry/faceoff/vllm-cpu"
bash "$root/deploy/images/sim/build.sh" >/dev/null  # makes the base image when missing
venv=$(bash "$root/deploy/vllm/install.sh")
context="$here/build/context"
rm -rf "$context" && mkdir -p "$context"
cp "$here/Dockerfile" "$root/deploy/vllm/vllm_cli.py" "$context/"
site=$(echo "$venv"/lib/python3.11/site-packages)
cp -a "$site" "$context/site-packages"
DOCKER_BUILDKIT=0 docker build -q -t "$repo:0.32.0" "$context" >&2
rm -rf "$context"
docker push -q "$repo:0.32.0" >&2
docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$repo:0.32.0" \
  | grep -m1 "^$repo@sha256:"
