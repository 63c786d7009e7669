"""The real Docker daemon and local registry: an offline-built image, pulled by digest."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker


def test_sim_image_pulls_by_digest_and_runs(docker_client, sim_image: str) -> None:  # type: ignore[no-untyped-def]
    repo, digest = sim_image.split("@")
    assert digest.startswith("sha256:") and len(digest) == 71
    image = docker_client.images.pull(repo, tag=digest)
    assert sim_image in image.attrs["RepoDigests"]
    out = docker_client.containers.run(
        sim_image,
        entrypoint=[
            "python3",
            "-c",
            "import aiohttp, prometheus_client, sys; print(sys.version_info[:2])",
        ],
        network_mode="host",
        remove=True,
    )
    assert out.decode().strip() == "(3, 11)"
