"""The span log: one JSON line per span when FACEOFF_SPANS names a file, nothing otherwise."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.campaign.spans import SPANS_ENV, SpanLog, span_log


def ticking(step_ns: int) -> Iterator[int]:
    now = 0
    while True:
        now += step_ns
        yield now


def test_spans_are_written_in_the_order_they_end_with_their_cell_and_arm(tmp_path: Path) -> None:
    clock = ticking(1_000)
    log = SpanLog(tmp_path / "spans.jsonl", clock=lambda: next(clock))
    with log.span("run cell", cell="c1", arm="inc"), log.span("guard", cell="c1", arm="inc"):
        pass
    with pytest.raises(RuntimeError), log.span("plan", cell="c2", arm="cand"):
        raise RuntimeError("a span that raises is still written")
    lines = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    assert lines == [
        {"span": "guard", "cell": "c1", "arm": "inc", "start_ns": 2_000, "end_ns": 3_000},
        {"span": "run cell", "cell": "c1", "arm": "inc", "start_ns": 1_000, "end_ns": 4_000},
        {"span": "plan", "cell": "c2", "arm": "cand", "start_ns": 5_000, "end_ns": 6_000},
    ]


def test_without_the_environment_variable_nothing_is_timed_or_written(tmp_path: Path) -> None:
    def no_clock() -> int:
        raise AssertionError("an unset span log reads no clock")

    log = span_log({})
    assert log.path is None
    with SpanLog(None, clock=no_clock).span("guard", cell="c1", arm="inc"):
        pass
    assert span_log({SPANS_ENV: str(tmp_path / "s.jsonl")}).path == tmp_path / "s.jsonl"
    assert list(tmp_path.iterdir()) == []
