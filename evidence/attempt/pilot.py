"""The pilot: one request of each cell contract on every arm, before the scored hours.
The same concept at other layers: ``flows.campaign.pilot``, ``faceoff.formats.pilot``.

``[campaign] pilot`` (or the scheduled deployment's default) makes the flow send, on each
arm's lane, one request of each distinct contract of its cells (``matrix.contracts``: the
longest input, then the shortest when that fails), journaled in phase ``pilot`` and never
scored. A request that breaks what the guards would judge (it errored, was refused,
overran its output contract, missed its needle), one the engine cut short of its
max_tokens at its context, or a lane that could not serve is found
before the first scored cell; the cells it condemns are blocked ``pilot_failed`` at once
(``"strict"``: the campaign stops there). Each request lands in
``pilot/<arm>/<cell>/`` (requests.json, journal.jsonl, client.log); ``pilot/pilot.json``
says what the pilot found and what it blocked (its format: ``faceoff.formats.pilot``). The
comparison carries it and the card says it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, RequestOutcome
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.pilot import PILOT_DIR, PILOT_FILE, PilotProbe, PilotRecord
from guards.validity import ERROR_STATUSES
from workload.journal import read_journal

NOT_RUN = "not_run"
ERROR_CHARS = 300  # of an error, in the record and the card; the journal keeps it whole


def probe_failure(outcome: RequestOutcome | None, setup_error: str | None) -> str | None:
    """Pure: what in one pilot request would fail or block its cells, or None."""
    if setup_error is not None:
        return f"it could not be planned on the lane: {_short(setup_error)}"
    if outcome is None:
        return "the client journaled no answer"
    return request_failure(outcome)


def request_failure(outcome: RequestOutcome) -> str | None:
    """Pure: what in a journaled pilot request the guards would fail or block its cells for."""
    if outcome.refusal:
        return f"the engine refused it: {_short(outcome.error or outcome.status.value)}"
    if outcome.status in ERROR_STATUSES:
        return f"{outcome.status.value}: {_short(outcome.error or 'no error text')}"
    cut = _cut_short(outcome)
    if cut is not None:
        return cut
    if outcome.overran_contract:
        return (
            f"it overran its {outcome.contract_words}-word contract: {outcome.output_words} "
            f"words, finish {outcome.finish_reason} at {outcome.max_tokens} max_tokens"
        )
    if outcome.marker_found is False:
        return "it did not recall its needle marker verbatim"
    return None


def _cut_short(outcome: RequestOutcome) -> str | None:
    """An engine that stops a request at its context before max_tokens (vLLM 0.32 shortens
    max_tokens to what the context has left instead of refusing): the cell would not
    measure the output it declares."""
    written = outcome.usage.completion_tokens if outcome.usage is not None else None
    if outcome.finish_reason != "length" or written is None or written >= outcome.max_tokens:
        return None
    return (
        f"the engine cut its output at {written} of the {outcome.max_tokens} max_tokens asked "
        f"({outcome.input_tokens} prompt tokens: the engine's context ran out)"
    )


def read_probe(
    folder: Path, root: Path, *, arm: str, contract: tuple[str, list[str]], setup_error: str | None
) -> PilotProbe:
    """The probe of one ``pilot/<arm>/<cell>/`` folder, from its plan and journal."""
    plan = RequestPlan.read(folder / PLAN_NAME) if (folder / PLAN_NAME).is_file() else None
    journal = folder / JOURNAL_NAME
    lines = read_journal(journal).outcomes if journal.is_file() else []
    outcome = next((o for o in lines if o.phase is Phase.PILOT), None)
    words, cells = contract
    return PilotProbe(
        arm=arm,
        cell_id=folder.name,
        contract=words,
        contract_cells=cells,
        input_tokens=plan.requests[-1].input_tokens if plan and plan.requests else None,
        status=outcome.status.value if outcome is not None else NOT_RUN,
        finish_reason=outcome.finish_reason if outcome is not None else None,
        output_words=outcome.output_words if outcome is not None else None,
        failure=probe_failure(outcome, setup_error),
        folder=folder.relative_to(root).as_posix(),
    )


def read_pilot(root: Path) -> PilotRecord | None:
    path = Path(root) / PILOT_DIR / PILOT_FILE
    return PilotRecord.read(path) if path.is_file() else None


def _short(text: str) -> str:
    return textwrap.shorten(" ".join(text.split()), ERROR_CHARS, placeholder=" …")
