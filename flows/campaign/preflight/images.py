"""Images: each Docker arm's pinned image is in the local store by its digest, or the
registry has that digest now (asked through the daemon; nothing is pulled).
The same concept at another layer: ``lanes.images``.
"""

from __future__ import annotations

from collections.abc import Callable

from docker import errors as docker_errors

from faceoff.errors import FaceoffError
from faceoff.formats.preflight import CheckResult
from faceoff.ports import DockerClient
from flows.campaign.preflight.catalog import arm_subject, fail, ok
from lanes.images import PinnedImage, local_pinned, parse_pinned
from matrix.arm import Arm, LaneKind


def image_checks(arms: list[Arm], docker: Callable[[], DockerClient]) -> list[CheckResult]:
    arms = [a for a in arms if a.lane is LaneKind.DOCKER and a.image is not None]
    if not arms:
        return [ok("images", "host", "no arm runs a Docker image")]
    try:
        client = docker()
    except FaceoffError as exc:
        return [
            fail("images", arm_subject(a.name), exc.what, exc.fix or "start the daemon")
            for a in arms
        ]
    return [image_check(a, client) for a in arms]


def image_check(arm: Arm, client: DockerClient) -> CheckResult:
    assert arm.image is not None
    pinned = parse_pinned(arm.image, where=f"arms[{arm.name}].image")
    if local_pinned(client, pinned) is not None:
        return ok("images", arm_subject(arm.name), f"{pinned.ref} is in the local store")
    absent = registry_absence(client, pinned)
    if absent is None:
        return ok(
            "images",
            arm_subject(arm.name),
            f"{pinned.ref} is not in the local store; its registry has it (the lane pulls it)",
        )
    return fail(
        "images",
        arm_subject(arm.name),
        f"{pinned.ref} is neither in the local store nor in its registry now: {absent}",
        f"push the image and pin its digest, or pull it while the registry is reachable "
        f"(docker pull {pinned.ref})",
    )


def registry_absence(client: DockerClient, pinned: PinnedImage) -> str | None:
    """Why the registry cannot give the digest now, or None when it can."""
    try:
        client.images.get_registry_data(pinned.ref)
    except docker_errors.APIError as exc:
        return str(exc.explanation or exc).strip()
    return None
