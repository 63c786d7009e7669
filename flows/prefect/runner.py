"""``faceoff run`` without the terminal: the flow call, SIGTERM handling, the exit status.

Exit status of ``faceoff run`` (also in docs/flows.md):

    0    complete: every planned cell run accepted, incumbent restored (or never touched)
    3    closed partial: some cell runs failed, blocked or pending; incumbent restored
    4    the incumbent's restoration failed (the last one of the run: a resume's pending
         restoration when no cell was left to run, else the one after the cells): read
         receipt.json and run `faceoff restore`
    2    an error before or during the run (the message says what and where), a preflight
         FAIL nobody waived among them (nothing touched)
    143  terminated by SIGTERM (the incumbent was restored before exit; see receipt.json)
    130  interrupted by Ctrl-C

Import this module only after ``ephemeral.prefect_defaults`` is applied: Prefect
reads its settings when it is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect.client.schemas.objects import State

from evidence.folder.preflight import PreflightReport
from flows.campaign.closing import CampaignResult
from flows.campaign.signals import sigterm_raises
from flows.prefect.flow import campaign
from matrix.freeze import FrozenMatrix

EXIT_COMPLETE = 0
EXIT_PARTIAL = 3
EXIT_NOT_RESTORED = 4


def run_campaign(
    matrix: Path | FrozenMatrix, workdir: Path, *, checked: PreflightReport | None = None
) -> CampaignResult:
    """Run the flow with SIGTERM raising ``Terminated`` around it, so restoration runs.
    ``matrix``: a TOML file, or the frozen matrix the command line made of one. The ledger
    is ``FACEOFF_DB_URL``'s, else the workdir's SQLite file. ``checked``: the preflight the
    command line ran already (else the flow runs it)."""
    given = matrix if isinstance(matrix, FrozenMatrix) else str(matrix)
    with sigterm_raises():
        state = campaign(matrix=given, workdir=str(workdir), checked=checked, return_state=True)
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
        return EXIT_NOT_RESTORED
    return EXIT_COMPLETE if result.complete else EXIT_PARTIAL
