"""summary.json and verdict.json answer the same about one attempt's journal.

Both read the journal through the same predicates of ``RequestOutcome``: which lines
are the attempt's, and which broke the output contract (an over-run breaks it; an
under-run is reported but breaks nothing).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evidence.attempt.summary import SUMMARY_FILE, summarize_attempt
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import Reason
from faceoff.formats.verdict import VERDICT_FILE, Outcome
from guards.judge import judge_cell
from tests.guards.helpers import CELLS
from workload.records import JOURNAL_NAME


def _written(folder: Path, frozen: FrozenMatrix) -> tuple[dict, dict]:
    """summary.json and verdict.json as written into the attempt folder, read back."""
    summarize_attempt(folder, arm="incumbent", attempt=1, slo=None).write(folder / SUMMARY_FILE)
    judge_cell(folder, frozen).write(folder / VERDICT_FILE)
    summary = json.loads((folder / SUMMARY_FILE).read_text())
    verdict = json.loads((folder / VERDICT_FILE).read_text())
    contract = next(r for r in verdict["rules"] if r["code"] == Reason.CONTRACT_OVERRUN)
    return summary, contract


def _edit_journal(folder: Path, index: int, **changes: object) -> None:
    path = folder / JOURNAL_NAME
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[index].update(changes)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_an_under_run_is_no_breach_in_the_summary_nor_the_verdict(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    folder = shutil.copytree(CELLS / "controlled", tmp_path / "attempt-1")
    _edit_journal(folder, 0, output_words=9)  # a contract of exactly 12 words
    summary, contract = _written(folder, frozen)
    assert contract["outcome"] == Outcome.PASSED
    assert contract["evidence"]["underruns"] == 1
    assert summary["contract_violations"] == contract["evidence"]["overruns"] == 0


def test_an_over_run_is_the_same_breach_in_the_summary_and_the_verdict(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    folder = shutil.copytree(CELLS / "controlled", tmp_path / "attempt-1")
    _edit_journal(folder, 1, output_words=20)
    summary, contract = _written(folder, frozen)
    assert contract["outcome"] == Outcome.FAILED
    assert summary["contract_violations"] == contract["evidence"]["overruns"] == 1


def test_a_line_of_another_attempt_is_foreign_to_the_summary_and_the_verdict(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    folder = shutil.copytree(CELLS / "controlled", tmp_path / "attempt-1")
    _edit_journal(folder, 1, attempt=2, output_words=20)  # an over-run, but not this attempt's
    summary, contract = _written(folder, frozen)
    assert summary["foreign_lines"] == 1 and summary["journaled_scored"] == 2
    assert summary["contract_violations"] == contract["evidence"]["overruns"] == 0
    assert contract["evidence"]["requests"] == 2
