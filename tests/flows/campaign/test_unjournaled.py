"""An interrupted attempt's planned requests that never reached its journal (a full disk
refused their lines) are named by a verdict in that attempt, never silently missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from faceoff.formats.attempt.cell_record import CELL_FILE
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.verdict import VERDICT_FILE, Outcome, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from faceoff.formats.reasons import Disposition, Reason
from flows.campaign.unjournaled import name_unjournaled, unjournaled
from guards.judge import judge_cell

DATA = Path(__file__).resolve().parents[2] / "data" / "guards"


@pytest.fixture
def frozen() -> FrozenMatrix:
    return read_frozen(DATA / "matrix.frozen.json")


@pytest.fixture
def attempt(tmp_path: Path) -> Path:
    """A real attempt folder (a warmup, 6 scored requests); its journal kept two lines."""
    folder = tmp_path / "attempt-1"
    shutil.copytree(DATA / "cells" / "warm-cache", folder)
    journal = folder / JOURNAL_NAME
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:2]))
    return folder


def test_a_complete_journal_gets_no_verdict(frozen: FrozenMatrix, tmp_path: Path) -> None:
    folder = tmp_path / "attempt-1"
    shutil.copytree(DATA / "cells" / "warm-cache", folder)
    assert unjournaled(folder) == (6, [])
    assert name_unjournaled(folder, frozen, "c", "incumbent", 1) is None
    assert not (folder / VERDICT_FILE).exists()


def test_missing_lines_without_a_cell_record_are_named_by_a_verdict_of_their_own(
    attempt: Path, frozen: FrozenMatrix
) -> None:
    (attempt / CELL_FILE).unlink()
    said = name_unjournaled(attempt, frozen, "natural-600-c1", "incumbent", 1)

    assert said is not None and "5 of 6 planned requests have no journal line" in said
    assert "(requests 1, 2, 3, 4, 5)" in said and "attempt 2 runs the cell again" in said
    verdict = Verdict.read(attempt / VERDICT_FILE)
    assert (verdict.disposition, verdict.reason) == (
        Disposition.FAILED,
        Reason.REQUESTS_NOT_TERMINAL,
    )
    assert (verdict.cell_id, verdict.arm, verdict.attempt) == ("natural-600-c1", "incumbent", 1)
    assert verdict.sentence == said


def test_missing_lines_with_a_cell_record_are_judged_by_the_guards_as_the_audit_does(
    attempt: Path, frozen: FrozenMatrix
) -> None:
    assert name_unjournaled(attempt, frozen, "c", "incumbent", 1) is not None

    verdict = Verdict.read(attempt / VERDICT_FILE)
    assert verdict == judge_cell(attempt, frozen)  # what `faceoff audit` recomputes
    assert verdict.disposition is not Disposition.ACCEPTED
    assert verdict.rule(Reason.REQUESTS_NOT_TERMINAL).outcome is Outcome.FAILED


def test_a_verdict_already_written_is_kept(attempt: Path, frozen: FrozenMatrix) -> None:
    (attempt / VERDICT_FILE).write_text("kept\n")
    assert name_unjournaled(attempt, frozen, "c", "incumbent", 1) is None
    assert (attempt / VERDICT_FILE).read_text() == "kept\n"
