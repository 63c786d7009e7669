"""The real vLLM engine as a Docker lane, started by digest from the local registry.

The image (deploy/images/vllm/build.sh: the host's vLLM venv imported onto a Debian
rootfs) is built once per host and reused by digest; `.ci/run` builds it and sets
FACEOFF_VLLM_IMAGE and FACEOFF_REQUIRE_VLLM_IMAGE=1, so there it runs or fails, never skips.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.receipt import verify_receipt
from flows.prefect.flow_runner import run_campaign
from tests.conftest import missing_service
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.lanes.helpers import remove_campaign_containers
from tests.vllm.engine import ENGINE_ENV, NOT_APPLICABLE, ONE_CORE, REPO, cell, vllm_arm

pytestmark = [pytest.mark.vllm_image, pytest.mark.docker, pytest.mark.prefect]
MODEL_TARGET = "/models/tiny-llama"
BUILD = REPO / "deploy/images/vllm/build.sh"


@pytest.fixture(scope="session")
def vllm_image(docker_client: Any, vllm_engine: Path) -> str:
    """The vLLM CPU image as repo@sha256:…, built (or reused) if CI did not already."""
    ref = os.environ.get("FACEOFF_VLLM_IMAGE")
    if ref:
        return ref
    try:
        out = subprocess.run(
            ["bash", str(BUILD)], check=True, capture_output=True, text=True, timeout=1800
        )
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        missing_service("vLLM CPU image build", "FACEOFF_REQUIRE_VLLM_IMAGE", detail[-2000:])
    ref = out.stdout.strip().splitlines()[-1]
    os.environ["FACEOFF_VLLM_IMAGE"] = ref
    return ref


@pytest.fixture
def containers(docker_client: Any) -> Iterator[Any]:
    yield docker_client
    remove_campaign_containers(docker_client, "vllm-docker")


def docker_arm(name: str, role: str, image: str, model: Path, *args: str) -> dict[str, Any]:
    arm = vllm_arm(name, role, Path(MODEL_TARGET), *args)
    command = [*ONE_CORE, "python3", "/opt/vllm/vllm_cli.py", "serve", MODEL_TARGET]
    arm |= {"lane": "docker", "image": image, "command": command}
    arm |= {"mounts": [{"source": str(model), "target": MODEL_TARGET}], "env": ENGINE_ENV}
    arm["weights_manifest"] = MODEL_TARGET
    return arm


@pytest.mark.usefixtures("prefect_harness")
def test_two_vllm_containers_by_digest_run_a_campaign_and_the_incumbent_is_restored(
    vllm_image: str,
    tiny_model: Path,
    containers: Any,
    workdir: Path,
    tmp_path: Path,
) -> None:
    data = {
        "schema_version": 1,
        "campaign": {"name": "vllm-docker", "seed": 3, "stop_policy": "continue"},
        "arms": [
            docker_arm("inc", "incumbent", vllm_image, tiny_model, "--max-num-seqs", "8"),
            docker_arm("cand", "candidate", vllm_image, tiny_model, "--max-num-seqs", "4"),
        ],
        "cells": [cell("natural-512-c2", concurrency=2)],
        "families": {"not_applicable": NOT_APPLICABLE},
        # a loaded CI host stalls a four-request cell past the stall guard (its own tests
        # judge it): this test is of the real engine as a Docker lane by digest
        "thresholds": LOADED_HOST,
    }
    result = run_campaign(write_matrix(tmp_path, data), workdir)

    assert result.complete and result.restored, result.closure.sentence
    receipt = verify_receipt(result.bundle / "receipt.json")
    assert receipt.outcome == "restored"
    assert receipt.image == vllm_image
    assert audit_bundle(result.bundle).ok
