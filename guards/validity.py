"""Validity rules over the journal, the plan and cell.json; each pure, each with its code.

Every rule returns passed, failed, not applicable (the cell has nothing it
checks: no output contract, a warm-by-design cell) or not evaluated (the data
it needs is missing, and the detail says which). ``RULES`` lists every rule in
precedence order: the first failure names the disposition's reason, the root
cause before its consequences (an OOM kill before the errors it caused).
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Callable

from collectors.cadence import journal_window
from faceoff.formats.attempt.cell_record import LaneAtEnd
from faceoff.formats.attempt.journal import Phase, RequestOutcome, RequestRole, Status
from faceoff.formats.attempt.verdict import RuleResult
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts
from guards.counters import counter_reconciliation, engine_restarted, preemptions, warm_cache
from guards.gpu_validity import gpu_contended, gpu_errors, gpu_throttled
from guards.host_stall import host_stall
from guards.needle import needle
from guards.outcomes import failed, judged, not_applicable, not_evaluated, passed
from guards.schedule_lag import schedule_lag
from guards.source_rows import source_rows
from matrix.cell import Cell
from matrix.thresholds import Thresholds
from workload.records import EXIT_DEADLINE

Rule = Callable[[CellArtifacts, Cell, Thresholds], RuleResult]

ERROR_STATUSES = (Status.HTTP_ERROR, Status.STREAM_ERROR, Status.TIMEOUT, Status.CANCELLED)
OOM_TEXT = re.compile(r"out of memory|OutOfMemory|\bOOM\b", re.IGNORECASE)
MAX_LISTED = 10
ERROR_CHARS = 240  # of a request's error, in the error-rate sentence
ERROR_CUT = " … (whole error in journal.jsonl)"  # cut between words, and said so
UNNAMED = "ok_without_finish_reason"  # an error only under require_finish_reason


def oom(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    code = Reason.OOM
    lane = art.record.lane_end
    in_journal = sum(1 for o in art.own_lines if o.error and OOM_TEXT.search(o.error))
    if lane is None:
        return not_evaluated(code, "cell.json does not say how the lane was after the cell")
    seen = int(lane.oom) + in_journal
    lane_text = f"the lane was OOM-killed ({lane_ending(lane)})" if lane.oom else _no_oom(lane)
    return judged(
        code,
        seen <= t.max_oom,
        f"{seen} OOM observation(s): {lane_text}, {in_journal} request error(s) naming out of "
        f"memory (the matrix allows {t.max_oom})",
        oom_observations=seen,
        lane_oom=lane.oom,
        lane_exit_code=lane.exit_code,
        journal_oom_errors=in_journal,
        max_oom=t.max_oom,
    )


def lane_exited(art: CellArtifacts, _: Cell, __: Thresholds) -> RuleResult:
    code = Reason.LANE_EXITED
    lane = art.record.lane_end
    if lane is None:
        return not_evaluated(code, "cell.json does not say how the lane was after the cell")
    if lane.running:
        return passed(code, "the lane was still running after the cell", running=True)
    return failed(
        code,
        f"the lane had ended by the end of the cell ({lane_ending(lane)})",
        running=False,
        exit_code=lane.exit_code,
        signal=lane.signal,
        oom_killed=lane.oom_killed,
    )


def lane_ending(lane: LaneAtEnd) -> str:
    """How the lane ended, in words: as first observed, else its exit code."""
    return lane.detail or f"exit code {lane.exit_code}"


def _no_oom(lane: LaneAtEnd) -> str:
    if lane.running:
        return "no OOM kill of the lane"
    said = "nothing says it was OOM-killed" if lane.oom_killed is None else "not by an OOM kill"
    return f"the lane ended ({lane_ending(lane)}), {said}"


def deadline(art: CellArtifacts, cell: Cell, __: Thresholds) -> RuleResult:
    code = Reason.DEADLINE
    record = art.record
    if not record.ran:
        return not_evaluated(code, "the client process was never started")
    hit = record.deadline_hit or record.client_exit_code == EXIT_DEADLINE
    unfinished = sum(1 for o in art.scored if o.status is Status.CANCELLED)
    wall = (record.ended_at - record.started_at).total_seconds()
    verb = "stopped the client" if hit else "was not reached"
    return judged(
        code,
        not hit,
        f"the cell deadline of {record.deadline_s} s {verb} (attempt took {wall:.1f} s; "
        f"{unfinished} scored request(s) cancelled; client exit {record.client_exit_code})",
        deadline_s=record.deadline_s,
        wall_s=round(wall, 3),
        cancelled=unfinished,
        client_exit_code=record.client_exit_code,
    )


def _journal_problems(art: CellArtifacts) -> list[str]:
    journal, problems = art.journal, []
    if journal.torn_tail is not None:
        problems.append("its last line is torn (a kill mid-write)")
    if journal.bad_lines:
        problems.append(f"lines {journal.bad_lines[:MAX_LISTED]} are not JSON")
    if journal.invalid:
        problems.append(f"{len(journal.invalid)} line(s) are not outcomes ({journal.invalid[0]})")
    foreign = len(art.outcomes) - len(art.own_lines)
    if foreign:
        problems.append(f"{foreign} line(s) belong to another plan, arm or attempt")
    return problems


def requests_terminal(art: CellArtifacts, cell: Cell, __: Thresholds) -> RuleResult:
    code = Reason.REQUESTS_NOT_TERMINAL
    if art.plan is None:
        return not_evaluated(code, f"no request plan to count against: {art.plan_error}")
    if cell.search is not None:
        return _probes_terminal(art, cell.search.budget)
    lines = Counter((o.phase, o.index) for o in art.own_lines)
    planned = [(r.phase, r.index) for r in art.plan.requests]
    missing = [key for key in planned if lines[key] == 0]
    doubled = [key for key in planned if lines[key] > 1]
    unplanned = sorted(set(lines) - set(planned))
    scored = [k for k in planned if k[0] is Phase.SCORED]
    problems = _journal_problems(art)
    if missing:
        problems.insert(0, f"missing {_keys(missing)}")
    if doubled:
        problems.append(f"two or more lines for {_keys(doubled)}")
    if unplanned:
        problems.append(f"lines for unplanned {_keys(unplanned)}")
    evidence = {
        "planned": len(planned),
        "planned_scored": len(scored),
        "journaled_scored": sum(1 for k in scored if lines[k]),
        "missing": len(missing),
        "duplicated": len(doubled),
        "torn_tail": art.journal.torn_tail is not None,
    }
    if not problems:
        return passed(code, f"each of the {len(planned)} planned requests has one line", **evidence)
    head = f"the journal has {evidence['journaled_scored']} of {len(scored)} scored request lines"
    return failed(code, f"{head}: {'; '.join(problems)}", **evidence)


def _probes_terminal(art: CellArtifacts, budget: int) -> RuleResult:
    """A needle search plans its probes as it goes: each has one line, numbered from 0
    without a gap, within the budget, and the client ended the search itself (or at the
    deadline, which the deadline rule judges)."""
    code = Reason.REQUESTS_NOT_TERMINAL
    lines = Counter((o.phase, o.index) for o in art.own_lines)
    probes = sorted(index for phase, index in lines if phase is Phase.PROBE)
    problems = _journal_problems(art)
    gaps = sorted(set(range(len(probes))) - set(probes))
    if gaps:
        problems.insert(0, f"probes numbered with gaps (missing {gaps[:MAX_LISTED]})")
    doubled = [key for key, count in lines.items() if count > 1]
    if doubled:
        problems.append(f"two or more lines for {_keys(sorted(doubled))}")
    others = sorted(key for key in lines if key[0] is not Phase.PROBE)
    if others:
        problems.append(f"lines for unplanned {_keys(others)}")
    if len(probes) > budget:
        problems.append(f"{len(probes)} probes, beyond the budget of {budget}")
    exit_code = art.record.client_exit_code
    if exit_code not in {0, EXIT_DEADLINE, None}:
        problems.append(f"the client ended with exit {exit_code} before the search was done")
    torn = art.journal.torn_tail is not None
    evidence = {"probes": len(probes), "budget": budget, "torn_tail": torn}
    if problems:
        return failed(code, f"the search journaled {len(probes)} probes: {'; '.join(problems)}",
                      **evidence)  # fmt: skip
    return passed(code, f"each of the {len(probes)} probes of the search has one line", **evidence)


def _keys(keys: list[tuple[Phase, int]]) -> str:
    shown = ", ".join(f"{phase.value} {index}" for phase, index in keys[:MAX_LISTED])
    more = f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else ""
    return shown + more


def error_rate(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    code = Reason.ERROR_RATE
    scored = art.scored
    total = len(art.planned(Phase.SCORED)) or len(scored)
    if not total:
        return not_evaluated(code, "no scored request was planned or journaled")
    errors = [o for o in scored if _errored(o, t)]
    by_status = Counter(UNNAMED if o.unnamed_finish else o.status.value for o in errors)
    rate = len(errors) / total
    first = f"; first: request {errors[0].index} {_error_text(errors[0])}" if errors else ""
    return judged(
        code,
        rate <= t.max_error_rate,
        f"{len(errors)} of {total} scored requests errored ({rate:.1%}; the matrix allows "
        f"{t.max_error_rate:.1%}){first}",
        errors=len(errors),
        scored=total,
        error_rate=round(rate, 6),
        max_error_rate=t.max_error_rate,
        length_limited=sum(1 for o in scored if o.status is Status.LENGTH_LIMIT),
        statuses=[f"{k}={v}" for k, v in sorted(by_status.items())],
    )


def _errored(outcome: RequestOutcome, t: Thresholds) -> bool:
    """An error status; or, where the matrix requires a finish_reason, an ok stream whose
    server never named one."""
    return outcome.status in ERROR_STATUSES or (t.require_finish_reason and outcome.unnamed_finish)


def _error_text(outcome: RequestOutcome) -> str:
    """The status and the engine's error, cut between words (and said so) when long, so a
    reason (and the ticket quoting it) never ends in a broken word."""
    if outcome.unnamed_finish:
        return f"{UNNAMED} (the matrix's require_finish_reason)"
    text = textwrap.shorten(outcome.error or "", ERROR_CHARS, placeholder=ERROR_CUT)
    return f"{outcome.status.value}: {text}" if text else outcome.status.value


def refusals(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    refused = [o.index for o in art.scored if o.refusal]
    return judged(
        Reason.REFUSALS,
        len(refused) <= t.max_refusals,
        f"{len(refused)} scored request(s) refused (the matrix allows {t.max_refusals})"
        + (f": requests {refused[:MAX_LISTED]}" if refused else ""),
        refusals=len(refused),
        max_refusals=t.max_refusals,
        refused=refused[:MAX_LISTED],
    )


def contract(art: CellArtifacts, cell: Cell, __: Thresholds) -> RuleResult:
    code = Reason.CONTRACT_OVERRUN
    bound = [o for o in art.scored if o.ran_to_contract]
    if cell.output_words is None and not bound:
        return not_applicable(code, f"a {cell.kind.value} cell has no output contract")
    if not bound:
        return not_evaluated(code, "no scored request with a contract ran to its end")
    over = [o for o in bound if o.overran_contract]
    under = sum(1 for o in bound if o.underran_contract)
    if not over:
        return passed(
            code,
            f"all {len(bound)} contract requests stayed within exactly "
            f"{bound[0].contract_words} words ({under} under)",
            requests=len(bound),
            overruns=0,
            underruns=under,
        )
    worst = max(over, key=lambda o: (o.contract_gap, o.finish_reason == "length"))
    return _overrun(code, worst, len(over), len(bound), under)


def _overrun(code: Reason, worst: RequestOutcome, count: int, of: int, under: int) -> RuleResult:
    completion = worst.usage.completion_tokens if worst.usage else None
    return failed(
        code,
        f"{count} of {of} contract requests overran; worst: request {worst.index} wrote "
        f"{worst.output_words} words against a contract of exactly {worst.contract_words} "
        f"(+{worst.contract_gap}), {completion} completion tokens of max_tokens "
        f"{worst.max_tokens}, finish reason {worst.finish_reason}",
        requests=of,
        overruns=count,
        underruns=under,
        worst_index=worst.index,
        worst_words=worst.output_words,
        contract_words=worst.contract_words,
        overrun_words=worst.contract_gap,
        completion_tokens=completion,
        max_tokens=worst.max_tokens,
        finish_reason=worst.finish_reason,
    )


def _actual_input(o: RequestOutcome) -> int:
    """The API's count when it gave one, else the lane's /tokenize count at plan time."""
    return o.usage.prompt_tokens if o.usage is not None else o.input_tokens


def _deviation(o: RequestOutcome) -> float:
    return abs(_actual_input(o) - o.target_input_tokens) / o.target_input_tokens


def input_on_target(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    code = Reason.INPUT_OFF_TARGET
    # A turn 2 carries turn 1's prompt plus a planned reply: the target applies to turn 1.
    judged_lines = [o for o in art.scored if o.role is not RequestRole.TURN_2]
    if not judged_lines:
        return not_evaluated(code, "no scored request to compare with its input target")
    worst = max(judged_lines, key=_deviation)
    off = [o.index for o in judged_lines if _deviation(o) > t.input_tolerance]
    return judged(
        code,
        not off,
        f"{len(off)} of {len(judged_lines)} scored requests off their input target by more than "
        f"{t.input_tolerance:.1%}; worst: request {worst.index} sent {_actual_input(worst)} "
        f"tokens for a target of {worst.target_input_tokens} ({_deviation(worst):.2%})",
        off_target=len(off),
        requests=len(judged_lines),
        worst_index=worst.index,
        worst_actual=_actual_input(worst),
        worst_target=worst.target_input_tokens,
        worst_deviation=round(_deviation(worst), 6),
        input_tolerance=t.input_tolerance,
    )


def window(art: CellArtifacts, _: Cell, __: Thresholds) -> RuleResult:
    code = Reason.WINDOW_MISMATCH
    recorded, spanned = art.record.window, journal_window(art.own_lines)
    if spanned is None:
        return passed(code, "no journaled request was sent", sent=0)
    if recorded is None:
        return failed(code, "cell.json has no window but the journal has sent requests")
    covers = recorded.start_ns <= spanned.start_ns and recorded.end_ns >= spanned.end_ns
    return judged(
        code,
        covers,
        f"cell.json's window {'covers' if covers else 'does not cover'} the journaled requests "
        f"(window {recorded.start_ns}..{recorded.end_ns}, requests "
        f"{spanned.start_ns}..{spanned.end_ns})",
        window_start_ns=recorded.start_ns,
        window_end_ns=recorded.end_ns,
        first_send_ns=spanned.start_ns,
        last_end_ns=spanned.end_ns,
    )


RULES: tuple[Rule, ...] = (
    oom,
    lane_exited,
    engine_restarted,
    deadline,
    requests_terminal,
    error_rate,
    refusals,
    contract,
    needle,
    preemptions,
    warm_cache,
    counter_reconciliation,
    input_on_target,
    window,
    host_stall,
    schedule_lag,
    gpu_throttled,
    gpu_contended,
    gpu_errors,
)


def validity(art: CellArtifacts, cell: Cell, thresholds: Thresholds) -> list[RuleResult]:
    """Every validity rule, in precedence order; a plan built from a file's rows is also
    rebuilt from them (a rule only such plans get: other verdicts keep their rules)."""
    sourced = art.plan is not None and art.plan.source is not None
    rules = (source_rows, *RULES) if sourced else RULES
    return [rule(art, cell, thresholds) for rule in rules]
