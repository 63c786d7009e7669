"""Every validity rule against captured cells: the clean pass, and the failure it catches.

summary.json and verdict.json answer the same about one attempt's journal.

Both read the journal through the same predicates of ``RequestOutcome``: which lines
are the attempt's, and which broke the output contract (an over-run breaks it; an
under-run is reported but breaks nothing).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from evidence.attempt.summary import summarize_attempt
from faceoff.formats.attempt.cell_record import LaneAtEnd
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import SUMMARY_FILE
from faceoff.formats.attempt.verdict import VERDICT_FILE, Outcome, RuleResult
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts, load_cell
from guards.judge import judge_cell
from guards.validity import RULES, validity
from matrix.cell import Cell, WorkloadKind
from matrix.thresholds import Thresholds
from tests.data.guards.capture import one_token_more, refused, torn_last_line
from tests.guards.helpers import CELLS, load, num, with_record

Derive = Callable[[Callable[[list[str]], str]], Path]


def cell_of(frozen: FrozenMatrix, art: CellArtifacts) -> Cell:
    return next(c for c in frozen.matrix.cells if c.id == art.record.cell_id)


def rules(
    art: CellArtifacts, frozen: FrozenMatrix, thresholds: Thresholds | None = None
) -> dict[Reason, RuleResult]:
    results = validity(art, cell_of(frozen, art), thresholds or frozen.matrix.thresholds)
    return {r.code: r for r in results}


def failures(art: CellArtifacts, frozen: FrozenMatrix) -> list[Reason]:
    return [r.code for r in rules(art, frozen).values() if r.failed]


@pytest.mark.parametrize(
    "name", ["natural", "controlled", "prefill-probe", "legacy-names", "candidate-natural"]
)
def test_clean_cells_pass_every_rule_that_applies(name: str, frozen: FrozenMatrix) -> None:
    results = rules(load(name), frozen)
    assert list(results) == [
        Reason.OOM,
        Reason.LANE_EXITED,
        Reason.ENGINE_RESTARTED,
        Reason.DEADLINE,
        Reason.REQUESTS_NOT_TERMINAL,
        Reason.ERROR_RATE,
        Reason.REFUSALS,
        Reason.CONTRACT_OVERRUN,
        Reason.NEEDLE_MISSED,
        Reason.PREEMPTIONS,
        Reason.WARM_CACHE,
        Reason.COUNTER_MISMATCH,
        Reason.INPUT_OFF_TARGET,
        Reason.WINDOW_MISMATCH,
        Reason.HOST_STALL,
        Reason.SCHEDULE_LAG,
        Reason.GPU_THROTTLED,
        Reason.GPU_CONTENDED,
        Reason.GPU_ERRORS,
    ]
    assert len(RULES) == len(results)
    # closed-loop cells: their streams send when free, there is no schedule to keep
    assert results[Reason.SCHEDULE_LAG].outcome is Outcome.NOT_APPLICABLE
    # simulator arms without GPU ids: no gpu.jsonl
    for code in (Reason.GPU_THROTTLED, Reason.GPU_CONTENDED, Reason.GPU_ERRORS):
        assert results[code].outcome is Outcome.NOT_APPLICABLE
    # These cells were captured before the host-stall monitor existed: no stalls.jsonl.
    assert results.pop(Reason.HOST_STALL).outcome is Outcome.NOT_EVALUATED
    outcomes = {r.outcome for r in results.values()}
    assert outcomes <= {Outcome.PASSED, Outcome.NOT_APPLICABLE}, [
        r.detail for r in results.values() if r.outcome not in outcomes
    ]


def test_a_sigkill_that_no_oom_counter_confirms_is_a_lane_exit_not_an_oom(
    frozen: FrozenMatrix,
) -> None:
    art = load("oom")  # the simulator SIGKILLed itself: exit 137, no OOM flag
    assert failures(art, frozen) == [Reason.LANE_EXITED, Reason.ERROR_RATE]
    oom = rules(art, frozen)[Reason.OOM]
    assert oom.evidence["lane_exit_code"] == 137 and oom.evidence["oom_observations"] == 0
    assert "nothing says it was OOM-killed" in oom.detail


def test_an_oom_kill_fails_the_cell_before_the_errors_it_caused(frozen: FrozenMatrix) -> None:
    art = load("oom")
    assert art.record.lane_end is not None
    flagged = art.record.lane_end.model_copy(update={"oom_killed": True})
    art = with_record(art, lane_end=flagged)
    assert failures(art, frozen) == [Reason.OOM, Reason.LANE_EXITED, Reason.ERROR_RATE]
    oom = rules(art, frozen)[Reason.OOM]
    assert oom.evidence["lane_exit_code"] == 137 and oom.evidence["oom_observations"] == 1
    assert "OOM-killed (exit code 137)" in oom.detail


def test_docker_says_oom_killed_and_max_oom_allows_it(frozen: FrozenMatrix) -> None:
    lane = LaneAtEnd(running=False, exit_code=137, oom_killed=True)
    art = with_record(load("natural"), lane_end=lane)
    assert rules(art, frozen)[Reason.OOM].failed
    allowed = frozen.matrix.thresholds.model_copy(update={"max_oom": 1})
    assert rules(art, frozen, allowed)[Reason.OOM].outcome is Outcome.PASSED
    # Docker saying "not OOM" wins over a bare exit 137 (a docker kill)
    killed = with_record(art, lane_end=lane.model_copy(update={"oom_killed": False}))
    assert rules(killed, frozen)[Reason.OOM].outcome is Outcome.PASSED


def test_a_lane_restart_mid_cell_is_a_counter_reset_failure(frozen: FrozenMatrix) -> None:
    art = load("counter-reset")
    assert art.record.lane_end is not None and art.record.lane_end.running  # restarted
    results = rules(art, frozen)
    restarted = results[Reason.ENGINE_RESTARTED]
    assert restarted.failed and restarted.evidence["resets"] == 1
    assert "the lane restarted" in restarted.detail
    # counters that reset cannot be reconciled or trusted for the cache
    assert results[Reason.COUNTER_MISMATCH].outcome is Outcome.NOT_EVALUATED
    assert results[Reason.WARM_CACHE].outcome is Outcome.NOT_EVALUATED


def test_the_cell_deadline_fails_and_says_what_it_cut(frozen: FrozenMatrix) -> None:
    art = load("deadline")
    deadline = rules(art, frozen)[Reason.DEADLINE]
    assert deadline.failed
    assert deadline.evidence["client_exit_code"] == 3
    assert deadline.evidence["deadline_s"] == 1.5
    assert deadline.evidence["cancelled"] == sum(1 for o in art.scored if o.status == "cancelled")


def test_a_torn_journal_line_leaves_a_request_not_terminal(
    frozen: FrozenMatrix, derived: Derive
) -> None:
    art = load_cell(derived(torn_last_line))
    assert art.journal.torn_tail is not None
    terminal = rules(art, frozen)[Reason.REQUESTS_NOT_TERMINAL]
    assert terminal.failed
    assert terminal.evidence["missing"] == 1 and terminal.evidence["torn_tail"] is True
    assert "its last line is torn" in terminal.detail
    # the engine served the lost request: the counters no longer reconcile either
    assert failures(art, frozen) == [Reason.REQUESTS_NOT_TERMINAL, Reason.COUNTER_MISMATCH]


def test_lines_of_another_attempt_are_foreign(frozen: FrozenMatrix) -> None:
    art = with_record(load("natural"), attempt=2)  # the journal says attempt 1
    terminal = rules(art, frozen)[Reason.REQUESTS_NOT_TERMINAL]
    assert terminal.failed and "7 line(s) belong to another plan, arm or attempt" in terminal.detail


def test_errors_beyond_the_rate_fail_with_the_first_error(frozen: FrozenMatrix) -> None:
    art = load("errors")
    errors = rules(art, frozen)[Reason.ERROR_RATE]
    assert errors.failed
    assert errors.evidence["errors"] == sum(1 for o in art.scored if o.status == "http_error")
    assert "injected fault" in errors.detail
    rate = num(errors.evidence["error_rate"])
    lenient = frozen.matrix.thresholds.model_copy(update={"max_error_rate": rate})
    assert not rules(art, frozen, lenient)[Reason.ERROR_RATE].failed


def test_a_long_engine_error_is_quoted_up_to_a_word_and_says_where_the_rest_is(
    frozen: FrozenMatrix,
) -> None:
    art = load("errors")
    long = "This model's maximum context length is 32768 tokens. However, your input " * 10
    outcomes = [o.model_copy(update={"error": long}) if o.error else o for o in art.outcomes]
    journal = dataclasses.replace(art.journal, outcomes=outcomes)
    detail = rules(dataclasses.replace(art, journal=journal), frozen)[Reason.ERROR_RATE].detail
    assert detail.endswith(" … (whole error in journal.jsonl)"), detail
    quoted = detail.split("http_error: ", 1)[1].removesuffix(" … (whole error in journal.jsonl)")
    assert long.startswith(quoted) and long[len(quoted)] == " "  # cut between two words


def test_a_stream_without_a_finish_reason_is_an_error_only_where_the_matrix_says(
    frozen: FrozenMatrix,
) -> None:
    """A server that ends with usage and [DONE] but names no finish_reason: the lines are
    ok with the reason null; error_rate counts them under require_finish_reason only."""
    art = load("natural")
    first = min(o.index for o in art.scored)
    lines = [
        o.model_copy(update={"finish_reason": None}) if o.scored and o.index == first else o
        for o in art.outcomes
    ]
    unnamed = dataclasses.replace(art, journal=dataclasses.replace(art.journal, outcomes=lines))
    assert not rules(unnamed, frozen)[Reason.ERROR_RATE].failed
    strict = frozen.matrix.thresholds.model_copy(update={"require_finish_reason": True})
    assert not rules(art, frozen, strict)[Reason.ERROR_RATE].failed
    errors = rules(unnamed, frozen, strict)[Reason.ERROR_RATE]
    assert errors.failed and errors.evidence["errors"] == 1
    assert errors.evidence["statuses"] == ["ok_without_finish_reason=1"]
    assert errors.detail.endswith(
        f"first: request {first} ok_without_finish_reason (the matrix's require_finish_reason)"
    ), errors.detail


def test_http_errors_never_reached_the_engine_so_counters_still_reconcile(
    frozen: FrozenMatrix,
) -> None:
    reconciled = rules(load("errors"), frozen)[Reason.COUNTER_MISMATCH]
    assert reconciled.outcome is Outcome.PASSED, reconciled.detail


def test_a_refused_request_fails_the_refusal_rule(frozen: FrozenMatrix, derived: Derive) -> None:
    art = load_cell(derived(refused))
    assert failures(art, frozen) == [Reason.REFUSALS]
    assert rules(art, frozen)[Reason.REFUSALS].evidence["refused"] == [0]


def test_a_contract_overrun_fails_with_its_evidence(frozen: FrozenMatrix) -> None:
    overrun = rules(load("contract-overrun"), frozen)[Reason.CONTRACT_OVERRUN]
    assert overrun.failed
    evidence = overrun.evidence
    assert evidence["finish_reason"] == "length"
    assert evidence["completion_tokens"] == evidence["max_tokens"] == 64
    assert evidence["contract_words"] == 12
    assert num(evidence["overrun_words"]) == num(evidence["worst_words"]) - 12
    assert "against a contract of exactly 12" in overrun.detail


def test_a_compliant_contract_passes_and_a_natural_cell_has_none(frozen: FrozenMatrix) -> None:
    kept = rules(load("controlled"), frozen)[Reason.CONTRACT_OVERRUN]
    assert kept.outcome is Outcome.PASSED and kept.evidence["overruns"] == 0
    natural = rules(load("natural"), frozen)[Reason.CONTRACT_OVERRUN]
    assert natural.outcome is Outcome.NOT_APPLICABLE


def test_preemptions_beyond_the_threshold_fail(frozen: FrozenMatrix) -> None:
    art = load("preemptions")  # a 1,024-token KV pool under two 512-token requests
    results = rules(art, frozen)
    preempted = results[Reason.PREEMPTIONS]
    assert preempted.failed and num(preempted.evidence["preemptions"]) >= 1
    # a preempted request re-reads its own blocks: no warm-cache verdict from those hits
    assert results[Reason.WARM_CACHE].outcome is Outcome.NOT_EVALUATED
    assert "preemption" in results[Reason.WARM_CACHE].detail


def test_a_rerun_on_a_warm_lane_fails_the_cold_cache_rule(frozen: FrozenMatrix) -> None:
    art = load("warm-cache")  # the natural plan run a second time on the same lane
    assert failures(art, frozen) == [Reason.WARM_CACHE]
    warm = rules(art, frozen)[Reason.WARM_CACHE]
    assert num(warm.evidence["hit_ratio"]) > 0.9


def test_a_session_reuse_cell_is_warm_by_design(frozen: FrozenMatrix) -> None:
    art = load("warm-cache")
    cell = cell_of(frozen, art).model_copy(update={"kind": WorkloadKind.SESSION_REUSE})
    results = validity(art, cell, frozen.matrix.thresholds)
    warm = next(r for r in results if r.code is Reason.WARM_CACHE)
    assert warm.outcome is Outcome.NOT_APPLICABLE


def test_reconciliation_off_by_one_token_fails(frozen: FrozenMatrix, derived: Derive) -> None:
    art = load_cell(derived(one_token_more))
    assert failures(art, frozen) == [Reason.COUNTER_MISMATCH]
    mismatch = rules(art, frozen)[Reason.COUNTER_MISMATCH]
    evidence = mismatch.evidence
    assert (
        num(evidence["journal_generation_tokens"]) == num(evidence["engine_generation_tokens"]) + 1
    )
    assert evidence["journal_prompt_tokens"] == evidence["engine_prompt_tokens"]
    assert "off by -1; tolerance 0" in mismatch.detail
    tolerant = frozen.matrix.thresholds.model_copy(update={"counter_tolerance_tokens": 1})
    assert rules(art, frozen, tolerant)[Reason.COUNTER_MISMATCH].outcome is Outcome.PASSED


def test_reconciliation_counts_warmups_inside_the_window(frozen: FrozenMatrix) -> None:
    art = load("natural")
    assert sum(1 for o in art.outcomes if o.phase == "warmup") == 1
    reconciled = rules(art, frozen)[Reason.COUNTER_MISMATCH]
    assert reconciled.evidence["requests_served"] == 7
    usage = [o.usage for o in art.outcomes if o.usage is not None]
    assert reconciled.evidence["engine_prompt_tokens"] == sum(u.prompt_tokens for u in usage)


def test_a_request_cancelled_in_flight_widens_the_expected_range(frozen: FrozenMatrix) -> None:
    reconciled = rules(load("deadline"), frozen)[Reason.COUNTER_MISMATCH]
    assert reconciled.outcome is Outcome.PASSED, reconciled.detail
    assert reconciled.evidence["requests_uncertain"] == 1  # in flight when the deadline hit
    assert "may have counted in part" in reconciled.detail


def test_input_off_target_names_the_worst_request(frozen: FrozenMatrix) -> None:
    art = load("natural")
    first = art.scored[0]
    assert first.usage is not None
    bigger = first.model_copy(
        update={"usage": first.usage.model_copy(update={"prompt_tokens": 600})}
    )
    journal = dataclasses.replace(
        art.journal, outcomes=[bigger if o is first else o for o in art.outcomes]
    )
    off = rules(dataclasses.replace(art, journal=journal), frozen)[Reason.INPUT_OFF_TARGET]
    assert off.failed
    assert off.evidence["worst_index"] == first.index and off.evidence["worst_actual"] == 600
    assert "sent 600 tokens for a target of 512" in off.detail


def test_a_window_that_misses_requests_fails(frozen: FrozenMatrix) -> None:
    art = load("natural")
    assert art.record.window is not None
    short = CellWindow(start_ns=art.record.window.start_ns + 1, end_ns=art.record.window.end_ns)
    assert failures(with_record(art, window=short), frozen) == [Reason.WINDOW_MISMATCH]


def with_template_hits(art: CellArtifacts, shared: int | None) -> CellArtifacts:
    """The clean cell as an engine whose chat template shares ``70`` leading tokens would
    count it: every sent request hits the preamble's whole blocks; the plan says how many
    tokens the prompts share (None: a plan written before it was recorded)."""
    assert art.plan is not None and art.telemetry is not None
    engine = art.telemetry.engine
    block = engine.block_size or 1
    sent = sum(1 for o in art.own_lines if o.send_ns is not None)
    counters = dict(engine.counters)
    hits = counters["prefix_cache_hits"]
    counters["prefix_cache_hits"] = hits.model_copy(update={"delta": (70 // block) * block * sent})
    telemetry = art.telemetry.model_copy(
        update={"engine": engine.model_copy(update={"counters": counters})}
    )
    plan = art.plan.model_copy(update={"shared_prefix_tokens": shared})
    # the journal lines are bound to the plan that was run: this one
    lines = [o.model_copy(update={"plan_sha256": plan.sha256()}) for o in art.outcomes]
    journal = dataclasses.replace(art.journal, outcomes=lines)
    return dataclasses.replace(art, plan=plan, telemetry=telemetry, journal=journal)


def test_the_cold_cache_rule_allows_the_whole_blocks_of_the_templates_shared_prefix(
    frozen: FrozenMatrix,
) -> None:
    art = load("natural")
    assert art.telemetry is not None and (art.telemetry.engine.block_size or 0) < 70
    preamble = rules(with_template_hits(art, 70), frozen)[Reason.WARM_CACHE]
    assert preamble.outcome is Outcome.PASSED, preamble.detail
    assert num(preamble.evidence["template_hits_allowed"]) > 0
    assert "allowed for the template's shared prefix" in preamble.detail
    unknown = rules(with_template_hits(art, None), frozen)[Reason.WARM_CACHE]
    assert unknown.failed  # without the plan's shared prefix, those hits look like a warm cache


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
