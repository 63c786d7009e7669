"""Pinned images: a tag refused with the fix, a pinned reference split into repository and
digest, and a running container held to the pinned digest."""

from __future__ import annotations

import pytest

from faceoff.errors import FaceoffError
from lanes.images import check_running_image, parse_pinned

PINNED = "127.0.0.1:5000/faceoff/sim@sha256:" + "a" * 64


def test_a_tag_is_refused_with_the_fix() -> None:
    with pytest.raises(FaceoffError) as err:
        parse_pinned("127.0.0.1:5000/faceoff/sim:latest", where="arms[inc].image")
    message = err.value.message
    assert "arms[inc].image" in message and "not pinned by digest" in message
    assert "repo@sha256:<64 hex>" in message


def test_a_pinned_ref_splits_into_repo_and_digest() -> None:
    pinned = parse_pinned(PINNED, where="x")
    assert pinned.repo == "127.0.0.1:5000/faceoff/sim"
    assert pinned.digest == "sha256:" + "a" * 64 and pinned.ref == PINNED


def test_running_image_must_carry_the_pinned_digest() -> None:
    pinned = parse_pinned(PINNED, where="x")
    ok = check_running_image(pinned, {"Id": "sha256:1", "RepoDigests": [PINNED]})
    assert ok.verified and ok.running == PINNED
    other = PINNED.replace("a" * 64, "b" * 64)
    bad = check_running_image(pinned, {"Id": "sha256:1", "RepoDigests": [other]})
    assert not bad.verified and bad.running == other and "not the pinned" in bad.detail
    hub = parse_pinned("docker.io/library/debian@sha256:" + "c" * 64, where="x")
    assert check_running_image(hub, {"RepoDigests": ["debian@sha256:" + "c" * 64]}).verified
