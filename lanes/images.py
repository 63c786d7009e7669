"""Pinned images: refusing tags, pulling by digest, and proving what a container runs.
The same concept at another layer: ``flows.campaign.preflight.images``.

An image already in the local store under the pinned digest is used as it is: a
registry outage or an air-gapped host must not keep the incumbent from coming back.
It is pulled only when missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import docker.errors

from faceoff.errors import FaceoffError
from faceoff.ports import DockerClient, DockerImage
from matrix.arm import DIGEST_REF

DEFAULT_REGISTRY = "docker.io/"


@dataclass(frozen=True)
class PinnedImage:
    repo: str
    digest: str  # "sha256:<64 hex>"

    @property
    def ref(self) -> str:
        return f"{self.repo}@{self.digest}"


@dataclass(frozen=True)
class ImageCheck:
    """Whether a container runs the pinned image, and what it runs instead."""

    verified: bool
    running: str  # the pinned ref when verified, else the digests (or id) it actually runs
    detail: str


def parse_pinned(ref: str, *, where: str) -> PinnedImage:
    """``repo@sha256:<64 hex>`` or a clear refusal; a tag names nothing stable."""
    match = DIGEST_REF.match(ref)
    if match is None:
        raise FaceoffError(
            f"image {ref!r} is not pinned by digest; a tag can move, so faceoff refuses it",
            where=where,
            fix="write the image as repo@sha256:<64 hex> (find it with "
            "`docker inspect --format '{{index .RepoDigests 0}}' IMAGE`)",
        )
    return PinnedImage(repo=match["repo"], digest=f"sha256:{match['hex']}")


def local_or_pull(client: DockerClient, pinned: PinnedImage, *, where: str) -> DockerImage:
    """The pinned image from the local store when it is there by this digest, else pulled."""
    local = local_pinned(client, pinned)
    return local if local is not None else pull_pinned(client, pinned, where=where)


def local_pinned(client: DockerClient, pinned: PinnedImage) -> DockerImage | None:
    """The local image that carries the pinned digest (its RepoDigests, or its id); None if
    the store has none."""
    try:
        image = client.images.get(pinned.ref)
    except docker.errors.APIError:  # not there, or the store cannot say: the pull decides
        return None
    same = check_running_image(pinned, image.attrs).verified or image.id == pinned.digest
    return image if same else None


def pull_pinned(client: DockerClient, pinned: PinnedImage, *, where: str) -> DockerImage:
    """Pull exactly this digest from its registry; a digest the registry lacks is refused."""
    try:
        return client.images.pull(pinned.repo, tag=pinned.digest)
    except docker.errors.NotFound as exc:
        raise FaceoffError(
            f"the registry has no image {pinned.ref} ({_explain(exc)})",
            where=where,
            fix="check the digest against the registry; a wrong or retyped digest is refused",
        ) from exc
    except docker.errors.APIError as exc:
        raise FaceoffError(
            f"pulling {pinned.ref} failed: {_explain(exc)}",
            where=where,
            fix="check that the registry is reachable and the digest exists there",
        ) from exc


def check_running_image(pinned: PinnedImage, running_image_attrs: dict[str, Any]) -> ImageCheck:
    """Compare the image a container runs (its inspect document) with the pinned digest."""
    digests = list(running_image_attrs.get("RepoDigests") or [])
    wanted = _normal(pinned.ref)
    if any(_normal(d) == wanted for d in digests):
        return ImageCheck(True, pinned.ref, f"container runs {pinned.ref}")
    running = ", ".join(digests) or str(running_image_attrs.get("Id"))
    return ImageCheck(False, running, f"container runs {running}, not the pinned {pinned.ref}")


def _normal(ref: str) -> str:
    """Docker Hub refs are spelled with and without ``docker.io/`` and ``library/``."""
    ref = ref.removeprefix(DEFAULT_REGISTRY)
    return ref.removeprefix("library/")


def _explain(exc: docker.errors.APIError) -> str:
    return str(exc.explanation or exc).strip()
