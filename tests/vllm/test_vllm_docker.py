"""The real vLLM engine as a Docker lane, started by digest from the local registry.

A manual run, not part of `make test`: the image carries vLLM's CPU build (3.6 GB),
whose build and push take about ten minutes here. `make vllm-docker-test` builds it
(deploy/images/vllm/build.sh) and runs this module with FACEOFF_VLLM_IMAGE set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.run import audit_bundle
from flows.prefect.runner import run_campaign
from lanes.receipt import verify_receipt
from tests.e2e.matrices import write_matrix
from tests.lanes.helpers import remove_campaign_containers
from tests.vllm.engine import ENGINE_ENV, NOT_APPLICABLE, cell, vllm_arm

pytestmark = [pytest.mark.vllm_image, pytest.mark.docker, pytest.mark.prefect]
MODEL_TARGET = "/models/tiny-llama"


@pytest.fixture
def vllm_image() -> str:
    ref = os.environ.get("FACEOFF_VLLM_IMAGE")
    if not ref:
        pytest.fail("FACEOFF_VLLM_IMAGE is not set: run `make vllm-docker-test`")
    return ref


@pytest.fixture
def containers(docker_client: Any) -> Iterator[Any]:
    yield docker_client
    remove_campaign_containers(docker_client, "vllm-docker")


def docker_arm(name: str, role: str, image: str, model: Path, *args: str) -> dict[str, Any]:
    arm = vllm_arm(name, role, Path(MODEL_TARGET), *args)
    arm |= {"lane": "docker", "image": image, "command": ["serve", MODEL_TARGET]}
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
    }
    result = run_campaign(write_matrix(tmp_path, data), workdir)

    assert result.complete and result.restored, result.closure.sentence
    receipt = verify_receipt(result.bundle / "receipt.json")
    assert receipt.outcome == "restored"
    assert receipt.image == vllm_image
    assert audit_bundle(result.bundle).ok
