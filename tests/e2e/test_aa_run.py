"""`faceoff run --aa`: the matrix's A/A twin, run as a campaign of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence.folder.layout import FROZEN_FILE, RESULT_FILE
from faceoff.formats.frozen_matrix import read_frozen
from tests.e2e.conftest import faceoff_run
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix


@pytest.mark.prefect
def test_run_aa_runs_the_incumbents_recipe_on_both_arms_as_its_own_campaign(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    inc = arm("inc", "incumbent", warmups=0)
    cand = arm("cand", "candidate", warmups=0, simulator={"time_scale": 40.0})
    data = matrix("e2e-twin", [inc, cand])
    data["cells"] = data["cells"][:1]
    path, log = write_matrix(tmp_path, data), tmp_path / "run.log"

    run = faceoff_run(path, workdir, harness_api, log=log, options=["--aa"])
    assert run.wait(600) in (0, 3), log.read_text()[-3000:]  # 3: a cell blocked by the load

    assert not (workdir / "e2e-twin").exists()  # the A/B campaign is untouched
    twin = read_frozen(workdir / "e2e-twin-aa" / FROZEN_FILE).matrix
    assert twin.campaign.aa and twin.arm("cand").port == cand["port"]
    assert twin.arm("cand").simulator == twin.arm("inc").simulator  # time_scale 20, not 40
    assert "A/A: " in (workdir / "e2e-twin-aa" / RESULT_FILE).read_text()
