"""judge_cell from native files: the verdict artifact, its inputs, recomputation, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from faceoff.canonical import sha256_hex
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from faceoff.formats.attempt.verdict import VERDICT_FILE, Outcome, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import Disposition, Reason
from guards.dispositions import Disposed
from guards.judge import judge_cell, judge_pair, not_run
from tests.guards.helpers import CELLS


def test_a_verdict_round_trips_and_names_its_native_inputs(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    verdict = judge_cell(CELLS / "natural", frozen)
    path = verdict.write(tmp_path / VERDICT_FILE)
    assert Verdict.read(path) == verdict
    assert set(verdict.inputs) == {
        "cell.json", "requests.json", "journal.jsonl", "engine.jsonl", "host.jsonl"
    }  # fmt: skip
    for name, digest in verdict.inputs.items():
        assert digest == sha256_hex((CELLS / "natural" / name).read_bytes()), name
    assert (verdict.cell_id, verdict.arm, verdict.attempt) == ("natural-512-c2", "incumbent", 1)
    assert verdict.matrix_id == frozen.matrix_id


def test_recomputing_gives_the_same_verdict_byte_for_byte(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    copy = shutil.copytree(CELLS / "warm-cache", tmp_path / "copy")
    first, again = judge_cell(CELLS / "warm-cache", frozen), judge_cell(copy, frozen)
    assert first.canonical() == again.canonical()


def test_an_edited_input_changes_the_recorded_hash(frozen: FrozenMatrix, tmp_path: Path) -> None:
    copy = shutil.copytree(CELLS / "natural", tmp_path / "copy")
    host = copy / "host.jsonl"
    host.write_text(host.read_text().replace('"seq":0,', '"seq":0, ', 1))
    assert (
        judge_cell(copy, frozen).inputs["host.jsonl"]
        != judge_cell(CELLS / "natural", frozen).inputs["host.jsonl"]
    )


def test_a_telemetry_json_in_the_folder_is_not_an_input(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    copy = shutil.copytree(CELLS / "natural", tmp_path / "copy")
    (copy / "telemetry.json").write_text("{}")  # recomputed from samples, never read
    verdict = judge_cell(copy, frozen)
    assert verdict.disposition is Disposition.ACCEPTED and "telemetry.json" not in verdict.inputs


def test_judging_under_another_matrix_is_refused(frozen: FrozenMatrix) -> None:
    other = frozen.model_copy(update={"matrix_id": "f" * 64})
    with pytest.raises(FaceoffError, match="not ffffffffffff") as err:
        judge_cell(CELLS / "natural", other)
    assert "natural-512-c2 arm incumbent attempt 1" in err.value.message


def test_a_folder_without_cell_json_is_an_error(frozen: FrozenMatrix, tmp_path: Path) -> None:
    with pytest.raises(FaceoffError, match=r"cell\.json is missing"):
        judge_cell(tmp_path, frozen)


def test_a_missing_plan_blocks_instead_of_raising(frozen: FrozenMatrix, tmp_path: Path) -> None:
    copy = shutil.copytree(CELLS / "natural", tmp_path / "copy")
    (copy / "requests.json").unlink()
    verdict = judge_cell(copy, frozen)
    assert verdict.reason is Reason.ARTIFACTS_MISSING
    assert "RequestPlan file is missing" in verdict.sentence


def test_a_lane_that_never_became_ready_leaves_only_cell_json(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    record = CellRecord.read(CELLS / "natural" / CELL_FILE).model_copy(
        update={
            "lane_ready": False,
            "lane_ready_reason": "exited with 1 before /health answered",
            "identity": None,
            "window": None,
            "client_exit_code": None,
            "lane_end": None,
        }
    )
    record.write(tmp_path / CELL_FILE)
    verdict = judge_cell(tmp_path, frozen)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.LANE_NOT_READY)
    assert verdict.sentence == "the lane never became ready: exited with 1 before /health answered"
    assert list(verdict.inputs) == [CELL_FILE]


def test_a_cell_that_never_ran_gets_a_verdict_without_families(frozen: FrozenMatrix) -> None:
    decision = Disposed(Disposition.BLOCKED, Reason.STOP_POLICY, "blocked by controlled-a/inc")
    verdict = not_run(frozen, "controlled-512-c1", "candidate", 1, decision)
    assert verdict.disposition is Disposition.BLOCKED and verdict.inputs == {}
    assert verdict.campaign == "guards-capture"


def test_pair_integrity_over_both_arms_plans() -> None:
    matched = judge_pair(CELLS / "natural", CELLS / "candidate-natural")
    assert matched.outcome is Outcome.PASSED, matched.detail
    assert matched.evidence["requests"] == 7 and matched.evidence["vector_mismatches"] == 0
    other = judge_pair(CELLS / "natural", CELLS / "candidate-other-seed")
    assert other.outcome is Outcome.FAILED
    assert other.evidence["vector_mismatches"] == 7
    assert other.evidence["seeds"] == ["7", "8"]
    assert "prompt-token vectors differ for 7 request(s), first scored 0" in other.detail
