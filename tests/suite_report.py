"""Where the suite's time goes: each test's whole time (setup, call and teardown), the 25
slowest, and every test outside the real-engine tier over a minute, named so that slowness
shows in the test that causes it. A report, never a timed assertion: hosts differ.

Printed at the end of a session; appended to the file named by ``FACEOFF_TEST_REPORT``
(``.ci/run`` keeps it beside its phase times), with the session's counts as a JSON line.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

SLOWEST = 25
SLOW_S = 60.0
REAL_ENGINE_TIER = ("vllm", "vllm_image", "gpu")
COUNTED = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def test_times(reports: list[Any]) -> dict[str, tuple[float, bool]]:
    """Pure: each test's summed phase durations, and whether it is in the real-engine tier."""
    seconds: dict[str, float] = defaultdict(float)
    real: dict[str, bool] = {}
    for report in reports:
        seconds[report.nodeid] += float(getattr(report, "duration", 0.0))
        real[report.nodeid] = any(k in report.keywords for k in REAL_ENGINE_TIER)
    return {node: (s, real[node]) for node, s in seconds.items()}


def report_lines(times: dict[str, tuple[float, bool]], label: str) -> list[str]:
    """Pure: the slowest tests, then every test outside the real-engine tier over a minute."""
    ranked = sorted(times.items(), key=lambda item: -item[1][0])
    lines = [f"{label}: the {min(SLOWEST, len(ranked))} slowest tests (setup+call+teardown)"]
    lines += [f"  {s:7.1f} s  {node}" for node, (s, _) in ranked[:SLOWEST]]
    slow = [(node, s) for node, (s, real) in ranked if s > SLOW_S and not real]
    lines.append(f"{label}: {len(slow)} tests outside the real-engine tier over {SLOW_S:.0f} s")
    lines += [f"  {s:7.1f} s  {node}" for node, s in slow]
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports
        return
    stats = terminalreporter.stats
    reports = [r for key in ("", *COUNTED) for r in stats.get(key, []) if hasattr(r, "when")]
    if not reports:
        return
    label = os.environ.get("FACEOFF_TEST_PHASE", "tests")
    lines = report_lines(test_times(reports), label)
    terminalreporter.write_sep("-", "where the time went")
    for line in lines:
        terminalreporter.write_line(line)
    target = os.environ.get("FACEOFF_TEST_REPORT")
    if target:
        counts = Counter({key: len(stats.get(key, [])) for key in COUNTED})
        with Path(target).open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
            out.write(json.dumps({"phase": label, "counts": dict(counts)}) + "\n")
