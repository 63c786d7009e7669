"""The live view's progress of a needle search: its probes out of its budget."""

from __future__ import annotations

from pathlib import Path

from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, Status
from faceoff.formats.attempt.request_plan import PLAN_NAME, PlanOptions, RequestPlan
from flows.cli.views.progress import AttemptProgress
from matrix.cell import Cell
from tests.workload.builders import failed
from workload.journal import JournalWriter


def test_a_search_counts_its_probes_against_its_budget(tmp_path: Path) -> None:
    cell = Cell.model_validate({
        "id": "needle-search-4000-c1", "kind": "needle_search", "input_tokens": 4000,
        "concurrency": 1, "requests": 6,
        "search": {"low": 500, "high": 4000, "step": 250, "budget": 6},
    })  # fmt: skip
    plan = RequestPlan(cell=cell, seed=1, namespace="ns", model="m", tokenizer_fingerprint="f",
                       max_model_len=None, options=PlanOptions(), requests=[])  # fmt: skip
    plan.write(tmp_path / PLAN_NAME)
    with JournalWriter(tmp_path / JOURNAL_NAME) as journal:
        for index in range(2):
            journal.submit(failed(Status.OK).model_copy(update={"phase": Phase.PROBE,
                                                                  "index": index}))  # fmt: skip
    progress = AttemptProgress(tmp_path).catch_up()
    assert (progress.done, progress.total) == (2, 6)
