"""Files on the campaign host: mount sources, a vLLM arm's model, weights-manifest
directories and the protected files, each where the lane or the receipt will look.
The same concept at another layer: ``faceoff.files``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from faceoff.errors import FaceoffError
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import arm_subject, fail, ok
from lanes.weights_manifest import host_path
from matrix.arm import Arm, LaneKind


def mount_checks(arms: list[Arm]) -> list[CheckResult]:
    """Each absolute mount source exists (a relative one is the static check's)."""
    found = []
    for arm in (a for a in arms if a.lane is LaneKind.DOCKER and a.mounts):
        sources = [m.source for m in arm.mounts if PurePosixPath(m.source).is_absolute()]
        missing = [s for s in sources if not Path(s).exists()]
        if missing:
            found.append(
                fail(
                    "mounts",
                    arm_subject(arm.name),
                    f"mount source(s) {', '.join(missing)} do not exist on this host; Docker "
                    "would refuse the container after the take-over",
                    "create or correct the paths (the model directory as downloaded)",
                )
            )
        elif sources:
            found.append(ok("mounts", arm_subject(arm.name), f"{', '.join(sources)} exist"))
    return found


def model_directory(arm: Arm) -> Path | None:
    """Where a vLLM arm's model lies on this host, when it names a path (None for a hub id,
    or a Docker path under no mount: the static check says so)."""
    model = arm.model
    if model is None or not model.startswith("/"):
        return None
    try:
        return host_path(arm, model)
    except FaceoffError:
        return None


def model_checks(arms: list[Arm]) -> list[CheckResult]:
    found = []
    for arm in arms:
        directory = model_directory(arm)
        if directory is None or mount_missing(arm, directory):
            continue
        if directory.exists():
            found.append(ok("model_path", arm_subject(arm.name), f"{directory} exists"))
        else:
            found.append(
                fail(
                    "model_path",
                    arm_subject(arm.name),
                    f"its model {directory} does not exist on this host",
                    "download the model there, or correct the path in command/engine_args",
                )
            )
    return found


def weights_checks(arms: list[Arm]) -> list[CheckResult]:
    found = []
    for arm in (a for a in arms if a.weights_manifest is not None):
        assert arm.weights_manifest is not None
        subject = arm_subject(arm.name)
        try:
            root = host_path(arm, arm.weights_manifest)
        except FaceoffError as exc:
            found.append(fail("weights", subject, exc.what, exc.fix or ""))
            continue
        if mount_missing(arm, root):
            continue
        if root.is_dir():
            found.append(ok("weights", subject, f"{root} is a directory of this host"))
        else:
            found.append(
                fail(
                    "weights",
                    subject,
                    f"weights_manifest {arm.weights_manifest} is {root} on this host, which "
                    "is no directory: identity would fail at the lane's start",
                    "point weights_manifest at the checkpoint directory, through the mounts",
                )
            )
    return found


def mount_missing(arm: Arm, host_directory: Path) -> bool:
    """A path inside a mount whose source is missing: the mounts check names the source."""
    return any(
        host_directory.is_relative_to(m.source) and not Path(m.source).exists()
        for m in arm.mounts
        if arm.lane is LaneKind.DOCKER
    )


def protected_checks(paths: list[str]) -> list[CheckResult]:
    """Protected files are hashed before the incumbent is touched and after restoration:
    each must be a regular file this user can read."""
    if not paths:
        return [ok("protected_files", "matrix", "none listed")]
    return [_protected(p) for p in paths]


def _protected(path: str) -> CheckResult:
    try:
        mode = Path(path).stat().st_mode
    except OSError as exc:
        return fail(
            "protected_files",
            path,
            f"cannot be read: {exc.strerror}",
            "correct the path in protected_files, or create the file",
        )
    if not stat.S_ISREG(mode):
        return fail(
            "protected_files",
            path,
            "is not a regular file (a folder or a device)",
            "list the files themselves; a folder's content is not hashed",
        )
    if not os.access(path, os.R_OK):
        return fail(
            "protected_files",
            path,
            "is not readable by this user",
            "run faceoff as a user who can read it, or grant read access",
        )
    return ok("protected_files", path, "a readable regular file")
