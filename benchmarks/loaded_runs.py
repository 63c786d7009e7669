"""Under load: the SIGKILL-resume test and `faceoff run` of the demo, with busy loops.

    make bench NAME=loaded_runs                       # 10 test runs, 5 demo runs, 2 loops
    .venv/bin/python -m benchmarks.loaded_runs --tests 10 --demos 5 --loops 2

The promise is that a busy host costs time, never a measured request or a start: the
test ``tests/e2e/test_interruptions.py::test_sigkill_mid_cell_then_resume_keeps_every_
request_and_adds_attempt_2`` (a real `faceoff run` SIGKILLed mid-cell, then resumed)
is run ``--tests`` times and ``faceoff run matrix/examples/sim-faceoff.toml`` (the demo,
with its own ephemeral Prefect server, into a fresh workdir, torn down after) ``--demos``
times, one at a time, while ``--loops`` processes spin on the CPU. Printed: passes of
each, exit codes, median and worst wall time, and the host's load average before and
after (the host is shared: other work adds to the loops). A demo run *completes* when
the campaign closed (exit 0, or 3: cells the guards did not accept, e.g. ``host_stall``
on a busy host), the incumbent was restored with a receipt, and ``faceoff audit`` of
its bundle passes; it *passes* when, besides, every cell was accepted (exit 0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.faults import busy_loops, operator_env

REPO = Path(__file__).resolve().parents[1]
RESUME_TEST = (
    "tests/e2e/test_interruptions.py::"
    "test_sigkill_mid_cell_then_resume_keeps_every_request_and_adds_attempt_2"
)
DEMO = REPO / "matrix" / "examples" / "sim-faceoff.toml"
TIMEOUT_S = 900.0


def timed(command: list[str], env: dict[str, str], log: Path) -> tuple[int, float]:
    """Exit code (-1: killed at the timeout) and wall time; the output goes to ``log``."""
    start = time.monotonic()
    with log.open("ab") as out:
        try:
            code = subprocess.run(
                command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                timeout=TIMEOUT_S, check=False,
            ).returncode  # fmt: skip
        except subprocess.TimeoutExpired:
            code = -1
    return code, time.monotonic() - start


def resume_test(log: Path) -> tuple[int, float]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", RESUME_TEST]
    return timed(command, dict(os.environ), log)


CLOSED = (0, 3)  # every cell accepted; or closed with cells the guards did not accept


def demo(log: Path) -> tuple[int, float, bool]:
    """Exit code, wall time, and whether the run completed (closed, restored, audit clean)."""
    with tempfile.TemporaryDirectory(prefix="loaded-demo-") as folder:
        env = operator_env()
        faceoff = [sys.executable, "-m", "flows"]
        code, wall = timed([*faceoff, "run", str(DEMO), "--workdir", folder], env, log)
        bundle = Path(folder) / "sim-faceoff"
        audited, _ = timed([*faceoff, "audit", str(bundle), "--workdir", folder], env, log)
        completed = code in CLOSED and (bundle / "receipt.json").is_file() and audited == 0
        timed([*faceoff, "teardown", "--workdir", folder], env, log)
    return code, wall, completed


def line(name: str, results: list[tuple[int, float]], passing: int) -> str:
    walls = [wall for _, wall in results]
    passed = sum(1 for code, _ in results if code == passing)
    return (
        f"{name:<14} {passed} of {len(results)} passed (exit {passing}); exits "
        f"{[code for code, _ in results]}; wall median {statistics.median(walls):.0f} s, "
        f"worst {max(walls):.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument("--demos", type=int, default=5)
    parser.add_argument("--loops", type=int, default=2)
    parser.add_argument("--logs", type=Path, help="keep each run's output here")
    args = parser.parse_args()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="loaded-runs-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"each run's output: {logs}/", flush=True)
    before = os.getloadavg()
    tests: list[tuple[int, float]] = []
    demos: list[tuple[int, float]] = []
    completed = 0
    loads: list[float] = []  # the 1-minute load average after each run
    with busy_loops(args.loops):
        for n in range(args.tests):
            tests.append(resume_test(logs / f"resume-test-{n + 1}.log"))
            loads.append(os.getloadavg()[0])
            print(f"resume test {n + 1}: exit {tests[-1][0]} in {tests[-1][1]:.0f} s", flush=True)
        for n in range(args.demos):
            code, wall, closed = demo(logs / f"demo-{n + 1}.log")
            demos.append((code, wall))
            completed += closed
            loads.append(os.getloadavg()[0])
            state = "completed" if closed else "DID NOT COMPLETE"
            print(f"demo {n + 1}: exit {code} in {wall:.0f} s, {state}", flush=True)
    after = os.getloadavg()
    print()
    print(
        f"busy loops: {args.loops}; 1-min load average before {before[0]:.1f}, after each run "
        f"median {statistics.median(loads or [0.0]):.1f} (max {max(loads or [0.0]):.1f}), "
        f"at the end {after[0]:.1f}"
    )
    if tests:
        print(line("resume test", tests, 0))
    if demos:
        print(line("demo", demos, 0))
        print(
            f"demo           {completed} of {len(demos)} completed (closed, incumbent restored "
            "with a receipt, audit clean)"
        )


if __name__ == "__main__":
    main()
