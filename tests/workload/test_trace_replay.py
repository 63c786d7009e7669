"""A 1,000-request Mooncake-format trace replayed at ten times its speed on two simulator lanes.

The shipped sample (``workload.traffic.samples``: about 100 s of arrivals at 10×, 62 % of its
prompt tokens computed by an earlier request) is planned on one lane and retokenized on
the other: both arms get the same records, token vectors and schedule (the pair guard),
each arm's client keeps to the schedule within the schedule-lag guard's default p99, and
each engine's prefix cache hits what the trace's hash_ids say it should, within 5 points.
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

from faceoff.canonical import file_sha256
from faceoff.formats.verdict import Outcome
from guards.pair import pair_integrity
from matrix.cell import Cell
from matrix.thresholds import MAX_SCHEDULE_LAG_MS
from simulator.launch import running
from workload.cell_client import client_command
from workload.journal import read_journal
from workload.lag import Lag, lag_of
from workload.outcome import Status
from workload.plan import RequestPlan, build_plan, retokenize
from workload.records import Phase
from workload.tokenizer import LaneTokenizer
from workload.traffic.rows import TraceSource

TRACE = Path(__file__).resolve().parents[2] / "matrix/examples/data/mooncake-1000.jsonl"
MODEL = "sim-bench"
SPEED = 10.0
REUSE_POINTS = 0.05
HITS, QUERIES = "vllm:prefix_cache_hits", "vllm:prefix_cache_queries"


def trace_cell() -> Cell:
    table = {"file": str(TRACE), "sha256": file_sha256(TRACE), "format": "mooncake"}
    return Cell.model_validate({
        "id": "mooncake-10x", "kind": "trace", "input_tokens": 6125, "requests": 1000,
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
    command = client_command(folder / "requests.json", url, folder / "journal.jsonl", arm="a",
                             attempt=1)  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    after = counters(url)
    scored = [o for o in read_journal(folder / "journal.jsonl").outcomes if o.phase is Phase.SCORED]
    assert [o.status for o in scored] == [Status.OK] * 1000
    lag = lag_of(scored)
    assert lag.p99_ms is not None and lag.p99_ms <= MAX_SCHEDULE_LAG_MS, lag
    first = min(o.due_ns for o in scored if o.due_ns is not None)
    due = [((o.due_ns or 0) - first) / 1e9 for o in sorted(scored, key=lambda o: o.index)]
    return due, (after[HITS] - before[HITS]) / (after[QUERIES] - before[QUERIES]), lag


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
