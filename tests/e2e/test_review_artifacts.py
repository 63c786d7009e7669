"""`faceoff review` republishes the campaign's Prefect artifacts: the card in Prefect says the
recorded decision, not "pending human review"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from flows.prefect.flow import campaign
from flows.prefect.flow_runner import result_of
from tests.e2e.conftest import REPO
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

pytestmark = pytest.mark.prefect


def latest_card(key: str) -> str:
    """The newest version of the artifact, read back from the Prefect API."""
    with get_client(sync_client=True) as client:
        found = client.read_latest_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))
        )
    (artifact,) = found
    return str(artifact.data)


def test_a_recorded_decision_is_republished_to_prefect(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    data = matrix("e2e-review", [arm("inc", "incumbent", warmups=0),
                                 arm("cand", "candidate", warmups=0)])  # fmt: skip
    data["cells"] = data["cells"][:1]
    path = write_matrix(tmp_path, data)
    result = result_of(campaign(matrix=str(path), workdir=str(workdir), return_state=True))
    assert result.complete
    before = latest_card("e2e-review-result-card")
    assert "Decision: pending human review" in before, before[:2000]

    env = {**os.environ, "PREFECT_API_URL": harness_api, "USER": "qa"}
    done = subprocess.run(
        [sys.executable, "-m", "flows", "review", "e2e-review", "--workdir", str(workdir),
         "--decision", "promote", "--note", "faster at C1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("recorded promote by qa: "), done.stdout + done.stderr
    assert "Prefect artifacts republished" in done.stdout, done.stdout + done.stderr
    assert not (workdir / ".prefect").exists()  # the Prefect API given was used, no other
    card = latest_card("e2e-review-result-card")
    assert "pending human review" not in card, card[:2000]
    assert "(recorded by qa)" in card and "faster at C1" in card, card[:2000]
