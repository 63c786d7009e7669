"""Dispositions and reason codes, the stop policy, campaign closure and the pair view."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import IdentityRef
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import MEANINGS, Disposition, Reason, disposition_of
from guards.dispositions import ClosureStatus, Ran, close_campaign, pair_view, stop_policy_block
from guards.judge import judge, judge_pair
from matrix.campaign_plan import CellRunKey, PairKey, plan
from matrix.cell import WorkloadKind
from matrix.model import StopPolicy
from tests.guards.helpers import CELLS, load, with_record

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "disposition", "reason"),
    [
        ("natural", Disposition.ACCEPTED, Reason.ACCEPTED),
        ("prefill-probe", Disposition.ACCEPTED, Reason.ACCEPTED),
        ("legacy-names", Disposition.ACCEPTED, Reason.ACCEPTED),
        ("family-missing", Disposition.BLOCKED, Reason.FAMILY_MISSING),
        ("metrics-gap", Disposition.BLOCKED, Reason.FAMILY_MISSING),
        ("oom", Disposition.FAILED, Reason.LANE_EXITED),  # a SIGKILL, not proven an OOM
        ("counter-reset", Disposition.FAILED, Reason.ENGINE_RESTARTED),
        ("deadline", Disposition.FAILED, Reason.DEADLINE),
        ("errors", Disposition.FAILED, Reason.ERROR_RATE),
        ("contract-overrun", Disposition.FAILED, Reason.CONTRACT_OVERRUN),
        ("preemptions", Disposition.FAILED, Reason.PREEMPTIONS),
        ("warm-cache", Disposition.FAILED, Reason.WARM_CACHE),
    ],
)
def test_each_captured_cell_gets_its_disposition(
    name: str, disposition: Disposition, reason: Reason, frozen: FrozenMatrix
) -> None:
    verdict = judge(load(name), frozen)
    assert (verdict.disposition, verdict.reason) == (disposition, reason), verdict.sentence
    assert disposition_of(reason) is disposition


def test_a_failure_outranks_missing_families_and_names_the_rest(frozen: FrozenMatrix) -> None:
    verdict = judge(load("oom"), frozen)  # the kill also cost engine families
    assert any(f.blocks for f in verdict.families)
    assert verdict.disposition is Disposition.FAILED
    assert verdict.sentence.endswith("(also failed: error_rate)")


def test_a_missing_required_family_is_blocked_never_accepted(frozen: FrozenMatrix) -> None:
    verdict = judge(load("family-missing"), frozen)
    assert all(not r.failed for r in verdict.rules)  # it ran cleanly
    assert verdict.sentence == (
        "required family missing — engine_prefill_time: request_prefill_time_seconds is "
        "absent from the engine samples"
    )


@pytest.mark.parametrize(
    ("changes", "reason", "words"),
    [
        ({"lane_ready": False, "lane_ready_reason": "no /health within 900 s"},
         Reason.LANE_NOT_READY, "the lane never became ready: no /health within 900 s"),
        ({"identity": IdentityRef(path="lanes/a/run/identity.json", sha256=None, ok=False,
                                  reason="quantization: expected exl3, boot log says fp8")},
         Reason.IDENTITY_MISMATCH, "identity not proven: quantization: expected exl3"),
        ({"identity": None}, Reason.IDENTITY_MISMATCH, "identity was never checked"),
        ({"telemetry_error": "the engine sampler could not start: HTTP 404"},
         Reason.TELEMETRY_UNAVAILABLE, "telemetry unavailable: the engine sampler could not"),
        ({"setup_error": "prompt of 9,000 tokens exceeds max_model_len 8,192",
          "client_exit_code": None},
         Reason.SETUP_FAILED, "could not be set up: prompt of 9,000 tokens exceeds"),
        ({"client_exit_code": None}, Reason.ARTIFACTS_MISSING, "never started"),
        ({"lane_end": None}, Reason.ARTIFACTS_MISSING, "OOM and exit unknown"),
    ],
)  # fmt: skip
def test_prerequisites_block_before_any_rule_runs(
    changes: dict[str, object], reason: Reason, words: str, frozen: FrozenMatrix
) -> None:
    verdict = judge(with_record(load("natural"), **changes), frozen)
    assert verdict.disposition is Disposition.BLOCKED and verdict.reason is reason
    assert words in verdict.sentence
    assert verdict.families == [] and verdict.rules == []


def test_an_unreadable_plan_blocks_the_cell(frozen: FrozenMatrix) -> None:
    art = dataclasses.replace(load("natural"), plan=None, plan_error="requests.json is missing")
    verdict = judge(art, frozen)
    assert verdict.reason is Reason.ARTIFACTS_MISSING
    assert "requests.json is missing" in verdict.sentence


def ran(cell_id: str, arm: str, kind: WorkloadKind, disposition: Disposition) -> Ran:
    return Ran(CellRunKey(cell_id, arm), kind, disposition)


EARLIER = [
    ran("natural-a", "inc", WorkloadKind.NATURAL, Disposition.ACCEPTED),
    ran("controlled-a", "inc", WorkloadKind.CONTROLLED, Disposition.FAILED),
    ran("natural-b", "inc", WorkloadKind.NATURAL, Disposition.BLOCKED),
]


def test_block_workload_blocks_later_cells_of_the_failed_kind_on_every_arm() -> None:
    later = CellRunKey("controlled-b", "cand")
    block = stop_policy_block(StopPolicy.BLOCK_WORKLOAD, EARLIER, later, WorkloadKind.CONTROLLED)
    assert block is not None and block.reason is Reason.STOP_POLICY
    assert block.sentence == (
        "controlled-b/cand not run: controlled-a/inc failed and stop policy block_workload "
        "blocks controlled cells"
    )
    # a blocked natural cell does not trigger the policy
    natural = CellRunKey("natural-c", "cand")
    natural_kind = WorkloadKind.NATURAL
    assert stop_policy_block(StopPolicy.BLOCK_WORKLOAD, EARLIER, natural, natural_kind) is None


def test_stop_campaign_blocks_everything_after_a_failure_and_continue_nothing() -> None:
    later = CellRunKey("natural-c", "cand")
    block = stop_policy_block(StopPolicy.STOP_CAMPAIGN, EARLIER, later, WorkloadKind.NATURAL)
    assert block is not None and "blocks every later cell" in block.sentence
    natural = WorkloadKind.NATURAL
    assert stop_policy_block(StopPolicy.CONTINUE, EARLIER, later, natural) is None
    assert stop_policy_block(StopPolicy.STOP_CAMPAIGN, EARLIER[:1], later, natural) is None


def test_closure_counts_every_planned_run(frozen: FrozenMatrix) -> None:
    planned = plan(frozen.matrix).cell_runs
    assert len(planned) == 8
    states = {
        planned[0]: Disposition.ACCEPTED,
        planned[1]: Disposition.FAILED,
        planned[2]: Disposition.BLOCKED,
        planned[3]: Disposition.BLOCKED,
        planned[4]: Disposition.ACCEPTED,
    }
    closure = close_campaign(planned, states)
    assert closure.status is ClosureStatus.CLOSED_PARTIAL
    counts = (closure.accepted, closure.failed, closure.blocked, closure.pending)
    assert counts == (2, 1, 2, 3)
    assert closure.sentence == (
        "closed partial: 2 accepted, 1 failed, 2 blocked, 3 pending of 8 planned cell runs"
    )
    complete = close_campaign(planned, dict.fromkeys(planned, Disposition.ACCEPTED))
    assert complete.status is ClosureStatus.COMPLETE and complete.accepted == 8


def test_closure_refuses_runs_the_plan_does_not_have(frozen: FrozenMatrix) -> None:
    planned = plan(frozen.matrix).cell_runs
    with pytest.raises(FaceoffError, match="stray-cell/incumbent"):
        close_campaign(planned, {CellRunKey("stray-cell", "incumbent"): Disposition.ACCEPTED})


def test_a_pair_is_comparable_only_when_both_arms_are_accepted_and_matched() -> None:
    pair = PairKey("natural-512-c2", "incumbent", "candidate")
    keys = CellRunKey(pair.cell_id, "incumbent"), CellRunKey(pair.cell_id, "candidate")
    matched = judge_pair(CELLS / "natural", CELLS / "candidate-natural")
    other_seed = judge_pair(CELLS / "natural", CELLS / "candidate-other-seed")
    accepted = dict.fromkeys(keys, Disposition.ACCEPTED)

    [good] = pair_view([pair], accepted, {pair: matched})
    assert good.comparable and good.reason is None
    [bad] = pair_view([pair], accepted, {pair: other_seed})
    assert not bad.comparable and bad.reason is Reason.PAIR_MISMATCH
    assert "seed 7 vs 8" in bad.sentence
    [half] = pair_view([pair], {keys[0]: Disposition.ACCEPTED, keys[1]: Disposition.BLOCKED}, {})
    assert half.reason is Reason.ARM_NOT_ACCEPTED
    assert half.sentence == "not comparable: incumbent accepted, candidate blocked"
    with pytest.raises(FaceoffError, match="no pair-integrity result"):
        pair_view([pair], accepted, {})


def test_every_reason_code_is_documented_with_its_meaning() -> None:
    page = (REPO / "docs" / "guards.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| \w+ \| (.+?) \|$", page, flags=re.MULTILINE))
    assert set(rows) == {r.value for r in Reason}
    for reason, meaning in MEANINGS.items():
        assert rows[reason.value] == meaning, reason
    assert set(MEANINGS) == set(Reason)
