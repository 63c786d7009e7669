"""A Mooncake-format trace replayed at ten times its speed on two simulator lanes.

The shipped sample's first 300 records (``workload.traffic.samples``: 305 s of arrivals, about
30 s at 10× per arm; the whole 1,000 took 100 s per arm and checked nothing more, the
schedule and the reuse being per request) are planned on one lane and retokenized on
the other: both arms get the same records, token vectors and schedule (the pair guard),
each arm's client keeps to the schedule within the schedule-lag guard's default p99 (unless
the host-stall monitor beside it saw the host keep it from a CPU more than a campaign's
host_stall rule allows: a busy test host, not the client), and each engine's prefix cache
hits what the trace's hash_ids say it should, within 5 points.
The outputs are capped at 32 tokens (the trace's go to 128): the schedule does not depend
on them, and the shared two-core host runs two lanes and the client at once.
"""

from __future__ import annotations

import asyncio
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.stall_log import read_stalls, summarize_stalls
from collectors.stall_monitor import StallMonitor
from faceoff.canonical import file_sha256
from faceoff.formats.attempt.journal import Phase, RequestOutcome, Status
from faceoff.formats.attempt.request_plan import RequestPlan, TraceSource
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import Lag
from faceoff.formats.attempt.verdict import Outcome
from guards.pair import pair_integrity
from matrix.cell import Cell
from matrix.thresholds import MAX_CLIENT_CPU_WAIT, MAX_SCHEDULE_LAG_MS, STALL_THRESHOLD_MS
from simulator.launch import running
from workload.cell_client import client_command
from workload.journal import read_journal
from workload.lag import lag_of
from workload.plan import build_plan, retokenize
from workload.tokenizer import LaneTokenizer

TRACE = Path(__file__).resolve().parents[3] / "matrix/examples/data/mooncake-1000.jsonl"
MODEL = "sim-bench"
SPEED = 10.0
REQUESTS = 300
REUSE_POINTS = 0.05
HITS, QUERIES = "vllm:prefix_cache_hits", "vllm:prefix_cache_queries"


def trace_cell() -> Cell:
    table = {"file": str(TRACE), "sha256": file_sha256(TRACE), "format": "mooncake"}
    return Cell.model_validate({
        "id": "mooncake-10x", "kind": "trace", "input_tokens": 6125, "requests": REQUESTS,
        "concurrency": 128, "arrival": "trace", "deadline_s": 600,
        "trace": table | {"time_scale": SPEED}, "sampling": {"max_tokens": 32},
    })  # fmt: skip


async def plans(incumbent: str, candidate: str) -> tuple[RequestPlan, RequestPlan]:
    async with aiohttp.ClientSession() as session:
        planned = await build_plan(trace_cell(), seed=20260315, namespace="replay", model=MODEL,
                                   tokenizer=LaneTokenizer(session, incumbent, MODEL))  # fmt: skip
        other = await retokenize(planned, LaneTokenizer(session, candidate, MODEL))
    return planned, other


def counters(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name in (HITS, QUERIES):
            found[family.name] = sum(s.value for s in family.samples if s.name.endswith("_total"))
    return found


def replay(plan: RequestPlan, url: str, folder: Path) -> tuple[list[float], float, Lag]:
    """Run the client over ``plan``; the scored requests' due offsets (s), the engine's
    prefix-cache hit ratio over the run and the schedule lag."""
    folder.mkdir()
    plan.write(folder / "requests.json")
    before = counters(url)
    journal = folder / "journal.jsonl"
    command = client_command(folder / "requests.json", url, journal, arm="a", attempt=1)
    monitor = StallMonitor(folder / "stalls.jsonl", threshold_ns=int(STALL_THRESHOLD_MS * 1e6),
                           client_marker=str(journal))  # fmt: skip
    monitor.start()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    finally:
        monitor.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    after = counters(url)
    scored = [o for o in read_journal(journal).outcomes if o.phase is Phase.SCORED]
    assert [o.status for o in scored] == [Status.OK] * REQUESTS
    lag = lag_of(scored)
    assert lag.p99_ms is not None, lag
    assert lag.p99_ms <= MAX_SCHEDULE_LAG_MS or starved(folder / "stalls.jsonl", scored), lag
    first = min(o.due_ns for o in scored if o.due_ns is not None)
    due = [((o.due_ns or 0) - first) / 1e9 for o in sorted(scored, key=lambda o: o.index)]
    return due, (after[HITS] - before[HITS]) / (after[QUERIES] - before[QUERIES]), lag


def starved(stalls: Path, scored: list[RequestOutcome]) -> bool:
    """Whether the host kept the client from a CPU longer than a campaign allows (its
    host_stall rule blocks such a cell): a busy test host, not a client that keeps a schedule
    badly, made the lag."""
    log = read_stalls(stalls)
    assert log is not None and log.start is not None, "the host-stall monitor never started"
    window = CellWindow(start_ns=min(o.send_ns or 0 for o in scored),
                        end_ns=max(o.end_ns for o in scored))  # fmt: skip
    summary = summarize_stalls(log, window)
    assert summary is not None and summary.watched, summary
    return (summary.client_wait_share or 0.0) > MAX_CLIENT_CPU_WAIT


@pytest.mark.timeout(1200)
def test_a_mooncake_trace_replays_at_ten_times_as_a_matched_pair(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    with (
        running("bench-200", time_scale=1.0, log_path=tmp_path / "inc.log") as incumbent,
        running("bench-200", time_scale=1.0, log_path=tmp_path / "cand.log") as candidate,
    ):
        planned, other = asyncio.run(plans(incumbent.url, candidate.url))
        pair = pair_integrity(planned, other)
        assert pair.outcome is Outcome.PASSED, pair.detail  # same records, vectors, schedule
        assert isinstance(planned.source, TraceSource) and planned.load is not None
        rate, reuse = planned.load.rate or 0.0, planned.source.reuse.ratio or 0.0
        record_property("offline_reuse", reuse)
        recorded = [r.arrival_s / rate for r in planned.phase(Phase.SCORED)]  # type: ignore[operator]
        for arm, lane, plan in (("inc", incumbent, planned), ("cand", candidate, other)):
            due, hit_ratio, lag = replay(plan, lane.url, tmp_path / arm)
            record_property(f"{arm}_lag_p99_ms", lag.p99_ms)  # the figures, in the JUnit XML
            record_property(f"{arm}_hit_ratio", hit_ratio)
            assert due == pytest.approx(recorded, abs=1e-6)  # the recorded times / 10
            assert abs(hit_ratio - reuse) <= REUSE_POINTS, (arm, hit_ratio, reuse)
