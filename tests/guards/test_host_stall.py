"""The host_stall rule over a captured cell: stalls placed inside its scored requests' spans."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from collectors.settings import CollectorSettings
from collectors.stall_log import StallLog, read_stalls
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.stalls import STALLS_FILE, ClientWait, MonitorStart, MonitorStop, Stall
from faceoff.formats.attempt.verdict import Outcome, RuleResult
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import Disposition, Reason
from guards.artifacts import CellArtifacts, load_cell
from guards.host_stall import host_stall
from guards.judge import judge
from matrix.thresholds import Thresholds
from simulator.launch import running
from tests.guards.cellrun import CellRun, run_cell
from tests.guards.helpers import load, num, with_thresholds

MS = 1_000_000
SETTINGS = CollectorSettings(engine_period_s=0.25, memory_period_s=0.5, drain_timeout_s=3.0)


def monitored(
    art: CellArtifacts, stalls: list[Stall], *, stopped: bool = True, wait_s: float | None = 0.0
) -> CellArtifacts:
    """The cell as if a monitor had watched it from before its first send to after its end."""
    window = art.record.window
    assert window is not None
    start = MonitorStart(
        pid=1,
        cpu=1,
        tick_ns=MS,
        threshold_ns=20 * MS,
        started_ns=window.start_ns - 1_000 * MS,
        wall_utc="2026-12-01T00:00:00+00:00",
    )
    stop = MonitorStop(
        stopped_ns=window.end_ns + 1_000 * MS, ticks=1, stalls=len(stalls), stalled_ns=0
    )
    # the client's readings bracket the window: its wait inside it is wait_s
    waited = round((wait_s or 0.0) * 1e9)
    readings = (
        ()
        if wait_s is None
        else (
            ClientWait(pid=7, at_ns=window.start_ns - MS, cpu_ns=0, waited_ns=3_000 * MS),
            ClientWait(pid=7, at_ns=window.end_ns + MS, cpu_ns=0, waited_ns=3_000 * MS + waited),
        )
    )
    log = StallLog(
        start=start, stalls=tuple(stalls), stop=stop if stopped else None, client=readings
    )
    return dataclasses.replace(art, stalls=log)


def at(art: CellArtifacts, from_ms: int, length_ms: int) -> Stall:
    """A stall ``from_ms`` into the cell window (the captured cell runs two streams:
    0-1 from 509 to ~1250 ms, 2-3 from ~1250 to 1974 ms, 4-5 from 1974 to 2436/2575 ms)."""
    window = art.record.window
    assert window is not None
    return Stall(start_ns=window.start_ns + from_ms * MS, length_ns=length_ms * MS)


def rule(art: CellArtifacts, thresholds: Thresholds | None = None) -> RuleResult:
    cell = None  # the rule does not read the cell spec
    return host_stall(art, cell, thresholds or Thresholds())  # type: ignore[arg-type]


def test_no_stall_passes_unflagged() -> None:
    result = rule(monitored(load("natural"), []))
    assert result.outcome is Outcome.PASSED
    assert result.evidence["flagged"] is False and result.evidence["affected"] == 0


def test_one_request_over_the_bound_is_flagged_by_index_but_passes() -> None:
    art = load("natural")  # 6 scored requests; 1 affected of 6 is 17 %
    result = rule(monitored(art, [at(art, 2_440, 120)]), Thresholds(max_stalled_requests=0.2))
    assert result.outcome is Outcome.PASSED
    assert result.detail.startswith("flagged: 1 of 6 scored requests")
    assert result.evidence["affected_requests"] == [5]  # only request 5 was still in flight
    assert result.evidence["worst_stall_ms"] == 120


def test_a_stall_below_the_per_request_bound_affects_no_request() -> None:
    art = load("natural")
    result = rule(monitored(art, [at(art, 600, 40), at(art, 1_300, 50)]))
    assert result.outcome is Outcome.PASSED and result.evidence["affected"] == 0


def test_stalls_over_many_requests_block_the_cell_host_stall(frozen: FrozenMatrix) -> None:
    art = load("natural")
    art = monitored(art, [at(art, 600, 619), at(art, 1_300, 80)])  # a stall hits all in flight
    result = rule(art)
    assert result.outcome is Outcome.FAILED
    assert result.evidence["affected_requests"] == [0, 1, 2, 3]
    verdict = judge(art, frozen)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.HOST_STALL)
    assert "4 of 6 scored requests overlapped more than 50 ms of host stall" in verdict.sentence


def test_a_client_starved_of_cpu_blocks_the_cell(frozen: FrozenMatrix) -> None:
    art = load("natural")
    window = art.record.window
    assert window is not None
    span_s = (window.end_ns - window.start_ns) / 1e9
    starved = monitored(art, [], wait_s=0.3 * span_s)  # 30 % of the cell waiting for a CPU
    result = rule(starved)
    assert result.outcome is Outcome.FAILED
    # the share is of the time between the readings, which bracket the window by 1 ms a side
    span_ns = window.end_ns - window.start_ns
    waited_ns = round(0.3 * span_s * 1e9)
    assert result.evidence["client_cpu_wait_share"] == round(waited_ns / (span_ns + 2 * MS), 6)
    verdict = judge(starved, with_thresholds(frozen, max_client_cpu_wait=0.5))
    assert verdict.disposition is Disposition.ACCEPTED


def test_without_a_monitor_or_with_a_killed_one_the_rule_is_not_evaluated() -> None:
    art = load("natural")
    assert rule(art).outcome is Outcome.NOT_EVALUATED  # captured before the monitor existed
    killed = monitored(art, [at(art, 600, 30)], stopped=False)
    result = rule(killed)
    assert result.outcome is Outcome.NOT_EVALUATED
    assert "does not span the scored requests" in result.detail


def test_an_accepted_cell_names_its_flagged_requests(frozen: FrozenMatrix) -> None:
    art = load("natural")
    flagged = monitored(art, [at(art, 2_440, 120)])
    verdict = judge(flagged, with_thresholds(frozen, max_stalled_requests=0.2))
    assert verdict.disposition is Disposition.ACCEPTED
    assert "flagged: 1 of 6 scored requests overlapped more than 50 ms" in verdict.sentence
    assert "requests [5]" in verdict.sentence


def test_a_real_stall_during_a_live_cell_blocks_it_host_stall(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    """A live cell on the simulator; once its warmup is journaled the monitor process is
    stopped for 600 ms (the kernel will not run it: what a busy host does to it)."""

    def stall_the_monitor(run: CellRun) -> None:
        journal, stalls = run.folder / JOURNAL_NAME, run.folder / STALLS_FILE
        wait_for(lambda: journal.exists() and journal.read_text().count("\n") >= 1)
        log = read_stalls(stalls)
        assert log is not None and log.start is not None
        os.kill(log.start.pid, signal.SIGSTOP)
        try:
            time.sleep(0.6)
        finally:
            os.kill(log.start.pid, signal.SIGCONT)

    with running("tiny", args=["--served-model-name", "sim-tiny"]) as server:
        run = CellRun(
            frozen, "natural-512-c2", "incumbent", server, tmp_path, SETTINGS,
            during=stall_the_monitor,
        )  # fmt: skip
        run_cell(run)
    verdict = judge(load_cell(tmp_path), frozen)
    assert (verdict.disposition, verdict.reason) == (Disposition.BLOCKED, Reason.HOST_STALL), (
        verdict.sentence
    )
    log = read_stalls(tmp_path / STALLS_FILE)
    assert log is not None and max(s.length_ns for s in log.stalls) >= 550 * MS
    rule = verdict.rule(Reason.HOST_STALL)
    assert num(rule.evidence["worst_stall_ms"]) > 50  # the part inside the worst request
    assert rule.evidence["affected_requests"]


def wait_for(condition: Callable[[], bool], deadline_s: float = 120.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, "the cell never journaled its warmup"
        time.sleep(0.01)
