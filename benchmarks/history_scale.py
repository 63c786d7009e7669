"""`faceoff history` and `faceoff status` over a year of nights from 4 hosts, SQLite and PostgreSQL.

    make bench NAME=history_scale [ARGS="--nights 365 --hosts 4 --rounds 5 --pg-url URL"]

``benchmarks.history_year`` writes the year (ledger rows, minimal bundles, planted audit
outcomes) once into a SQLite ledger and once into a database of its own inside the
PostgreSQL server of ``--pg-url`` (default ``FACEOFF_TEST_PG_URL``; skipped without
one), created for the run and dropped after it. Each command runs as the operator runs
it, a fresh ``python -m flows`` process, so every figure includes the interpreter's
start and imports; ``faceoff version`` is the peer, measured in the same run: the floor
of any command. Prints, per ledger, the median wall time over ``--rounds`` of:
``history`` the first time (each bundle's night read from its comparison.json into the
history cache), ``history`` again (the cache holds every night), ``history --json``,
``status --all-hosts`` (every host's nights), and ``version``, wall and CPU (user +
system: a loaded shared host stretches the wall clock, not this); each as a ratio to
``version``; and ``history --html`` once (it draws every trend plot). Then the same as
one JSON line. Target: ``history`` and ``status`` under 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.history_year import Year, write_year
from tests.scratch_db import scratch_database

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 1.0


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu_seconds: float  # user + system of the command: what a loaded shared host does not inflate


def timed(args: list[str]) -> Run:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "160"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flows", *args], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"faceoff {' '.join(args)} failed: {done.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Run(seconds, cpu)


def median_of(args: list[str], rounds: int) -> Run:
    runs = [timed(args) for _ in range(rounds)]
    return Run(
        statistics.median(r.seconds for r in runs), statistics.median(r.cpu_seconds for r in runs)
    )


def measure(workdir: Path, db: str | None, rounds: int) -> dict[str, Run]:
    where = ["--workdir", str(workdir), *(["--db", db] if db else [])]
    found = {"history_first": timed(["history", *where])}
    found["history"] = median_of(["history", *where], rounds)
    found["history_json"] = median_of(["history", *where, "--json"], rounds)
    found["status"] = median_of(["status", "--all-hosts", *where], rounds)
    found["version"] = median_of(["version"], rounds)
    found["history_html"] = timed(["history", *where, "--html", str(workdir / "history.html")])
    return found


def print_rows(ledger: str, found: dict[str, Run]) -> None:
    floor = found["version"]
    for name in ("history_first", "history", "history_json", "status", "version", "history_html"):
        run = found[name]
        target = name in ("history", "history_json", "status")
        met = (" met" if run.seconds < TARGET_S else " MISSED") if target else ""
        print(
            f"{ledger:<11} {name:<14} {run.seconds:8.3f} s {run.seconds / floor.seconds:6.2f}×"
            f"  cpu {run.cpu_seconds:6.3f} s {run.cpu_seconds / floor.cpu_seconds:6.2f}×{met}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nights", type=int, default=Year.nights)
    parser.add_argument("--hosts", type=int, default=Year.hosts)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pg-url", default=os.environ.get("FACEOFF_TEST_PG_URL"))
    args = parser.parse_args()
    year = Year(nights=args.nights, hosts=args.hosts)
    results: dict[str, dict[str, Run]] = {}
    with tempfile.TemporaryDirectory(prefix="faceoff-history-") as tmp:
        start = time.perf_counter()
        write_year(Path(tmp) / "sqlite", None, year)
        print(f"generated {year.nights} nights × {year.hosts} hosts (SQLite) in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        results["sqlite"] = measure(Path(tmp) / "sqlite", None, args.rounds)
        if args.pg_url:
            with scratch_database(args.pg_url, "faceoff_history_bench") as url:
                write_year(Path(tmp) / "postgresql", url, year)
                results["postgresql"] = measure(Path(tmp) / "postgresql", url, args.rounds)
        else:
            print("PostgreSQL skipped: no --pg-url and no FACEOFF_TEST_PG_URL")
    print(f"{'ledger':<11} {'command':<14} {'wall':>10} {'/version':>7}  cpu (user+sys), /version;"
          " target: wall < 1 s")  # fmt: skip
    for ledger, found in results.items():
        print_rows(ledger, found)
    seconds = {name: {k: asdict(v) for k, v in runs.items()} for name, runs in results.items()}
    print(json.dumps({"nights": year.nights, "hosts": year.hosts, "rounds": args.rounds,
                      "seconds": seconds}))  # fmt: skip


if __name__ == "__main__":
    main()
