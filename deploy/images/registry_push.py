"""Push a one-layer image to a local registry over its HTTP API, the layer uncompressed.

`docker push` gzips every layer on one core: for the 3.6 GB vLLM CPU image that was most of
a fresh host's 13-minute build. A registry on loopback gains nothing from compression, and
the OCI image format allows an uncompressed layer (`application/vnd.oci.image.layer.v1.tar`),
so this uploads the tar as it is, with its config and manifest, and prints repo@sha256:…;
`docker pull` of that reference then gives the daemon the image and its RepoDigests, as a
push would have.

    registry_push.py LAYER.tar REGISTRY REPO TAG --env K=V … --cmd ARG …

Standard library only: it runs under the host's python3 before any virtual environment.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            sha.update(block)
    return f"sha256:{sha.hexdigest()}"


def request(
    url: str, method: str, data: bytes | Path | None = None, kind: str = ""
) -> dict[str, str]:
    """One registry call; its response headers. A Path is streamed, not read into memory."""
    headers = {"Content-Type": kind or "application/octet-stream"}
    with ExitStack() as opened:
        body = opened.enter_context(data.open("rb")) if isinstance(data, Path) else data
        if isinstance(data, Path):
            headers["Content-Length"] = str(data.stat().st_size)
        req = urllib.request.Request(url, data=body, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=1800) as resp:
            return dict(resp.headers)


def has_blob(base: str, digest: str) -> bool:
    try:
        request(f"{base}/blobs/{digest}", "HEAD")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def upload_blob(base: str, digest: str, data: bytes | Path) -> None:
    """A monolithic upload (POST for a session, PUT with the digest); skipped when present."""
    if has_blob(base, digest):
        return
    location = request(f"{base}/blobs/uploads/", "POST")["Location"]
    if location.startswith("/"):
        location = base.split("/v2/", maxsplit=1)[0] + location
    joiner = "&" if "?" in location else "?"
    request(f"{location}{joiner}digest={digest}", "PUT", data)


def image_config(diff_id: str, env: list[str], cmd: list[str]) -> bytes:
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": env, "Cmd": cmd},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    return json.dumps(config, sort_keys=True).encode()


def push(layer: Path, base: str, tag: str, env: list[str], cmd: list[str]) -> str:
    """Upload the layer, its config and a manifest tagged ``tag`` to ``base``
    (http://REGISTRY/v2/REPO); the manifest's sha256."""
    layer_digest = file_digest(layer)
    config = image_config(layer_digest, env, cmd)
    config_digest = f"sha256:{hashlib.sha256(config).hexdigest()}"
    upload_blob(base, layer_digest, layer)
    upload_blob(base, config_digest, config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG, "digest": config_digest, "size": len(config)},
        "layers": [{"mediaType": LAYER, "digest": layer_digest, "size": layer.stat().st_size}],
    }
    body = json.dumps(manifest, sort_keys=True).encode()
    request(f"{base}/manifests/{tag}", "PUT", body, MANIFEST)
    return f"sha256:{hashlib.sha256(body).hexdigest()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layer", type=Path)
    parser.add_argument("registry")
    parser.add_argument("repo")
    parser.add_argument("tag")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--cmd", nargs="+", default=[])
    args = parser.parse_args()
    base = f"http://{args.registry}/v2/{args.repo}"
    digest = push(args.layer, base, args.tag, args.env, args.cmd)
    print(f"{args.registry}/{args.repo}@{digest}")


if __name__ == "__main__":
    main()
