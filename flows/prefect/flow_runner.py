"""``faceoff run`` without the terminal: the flow call, SIGTERM handling, the exit status.

Exit status: 0 complete, 3 closed partial, 4 the incumbent's restoration failed, 2 an
error, 143 SIGTERM (the incumbent restored first), 130 Ctrl-C; each in full: docs/flows.md,
"faceoff run".

Import this module only after ``flows.prefect.server.apply_prefect_defaults``: Prefect
reads its settings when it is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect.client.schemas.objects import State

from faceoff.exits import Exit
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import PreflightReport
from flows.campaign.closing import CampaignResult
from flows.campaign.signals import sigterm_raises
from flows.prefect.flow import campaign


def run_campaign(
    matrix: Path | FrozenMatrix,
    workdir: Path,
    *,
    checked: PreflightReport | None = None,
    locked: bool = False,
) -> CampaignResult:
    """Run the flow with SIGTERM raising ``Terminated`` around it, so restoration runs.
    ``matrix``: a TOML file, or the frozen matrix the command line made of one. The ledger
    is ``FACEOFF_DB_URL``'s, else the workdir's SQLite file. ``checked``: the preflight the
    command line ran already (else the flow runs it); ``locked``: the caller holds the
    campaign's run lock."""
    given = matrix if isinstance(matrix, FrozenMatrix) else str(matrix)
    with sigterm_raises():
        state = campaign(matrix=given, workdir=str(workdir), checked=checked, locked=locked,
                         return_state=True)  # fmt: skip
    return result_of(state)


def result_of(state: State[Any]) -> CampaignResult:
    """The flow run's ``CampaignResult``, whatever its final state; an error the run raised
    is raised again."""
    data = state.result(raise_on_failure=False)
    if isinstance(data, CampaignResult):
        return data
    state.result()  # raises the run's own error
    raise TypeError(f"the campaign flow run ended {state.name} without a result")


def exit_status(result: CampaignResult) -> int:
    if not result.restored:
        return Exit.NOT_RESTORED
    return Exit.OK if result.complete else Exit.PARTIAL
