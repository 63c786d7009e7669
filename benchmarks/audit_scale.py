"""Bundle write and `faceoff audit` at 10 K, 100 K and 1 M requests, against `sha256sum -c`.

    make bench NAME=audit_scale [ARGS="--sizes 10000,100000 --rounds 3 --workdir DIR"]

For each size, ``benchmarks.synthetic_campaign`` writes a campaign folder of that
many scored requests (42 cells × 2 arms; kept under ``--workdir`` and reused when
it is already there, since a million requests take a while to generate). Then,
each in its own process so that its peak RSS is its own: ``write_bundle`` over
the folder, ``faceoff audit`` of the bundle (every hash and every recomputation),
and coreutils ``sha256sum -c SHA256SUMS`` over the same files, the floor for the
audit's hashing part. Prints one row per size (medians over ``--rounds``) with the
ratios audit / sha256sum and write / audit (wall time; CPU time, user + system, is shown
beside it, since a loaded shared host stretches the wall clock), then the same as one
JSON line.
Targets: the 1 M audit within 60 s, its peak RSS not growing with the journal, and
the bundle write within twice the audit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.synthetic_campaign import CAMPAIGN, Shape, generate
from faceoff.formats.receipt import RECEIPT_FILE

REPO = Path(__file__).resolve().parents[1]
TIME = "/usr/bin/time"  # GNU time: wall, user, system seconds and maximum RSS
WRITE = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from evidence.bundle.write import write_bundle
from collectors.inventory import PynvmlInventory, collect_host, collect_source
def no_docker():
    raise ConnectionError("not asked in the benchmark")
host = collect_host(PynvmlInventory(), no_docker)
source = collect_source(Path(sys.argv[2]))
write_bundle(Path(sys.argv[1]), now=lambda: datetime.now(UTC), host=host, source=source)
"""


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu_seconds: float  # user + system: what a loaded shared host does not inflate
    peak_rss_mib: float


def measured(command: list[str], cwd: Path) -> Run:
    """Wall time, CPU time and peak RSS of ``command`` as GNU time reports them (its child
    is exec'd from time itself, so the figure is the command's own, not this process's
    forked image); a failure stops the benchmark."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        timed = [TIME, "-f", "%e %U %S %M", "-o", report.name, *command]
        done = subprocess.run(timed, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(
                f"{' '.join(command[:4])} failed in {cwd}:\n{(done.stdout + done.stderr)[-2000:]}"
            )
        wall, user, system, rss_kib = report.read().split()[-4:]
    return Run(float(wall), float(user) + float(system), int(rss_kib) / 1024)


def campaign_at(workdir: Path, requests: int) -> tuple[Path, float | None]:
    """The synthetic campaign of ``requests``, generated unless already there."""
    folder = workdir / str(requests) / CAMPAIGN
    if (folder / RECEIPT_FILE).is_file():
        return folder, None
    start = time.perf_counter()
    generate(folder.parent, Shape(requests=requests))
    return folder, time.perf_counter() - start


def median_run(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.seconds for r in runs),
        statistics.median(r.cpu_seconds for r in runs),
        statistics.median(r.peak_rss_mib for r in runs),
    )


def measure(folder: Path, rounds: int) -> dict[str, Run]:
    python = sys.executable
    steps = {
        "write_bundle": [python, "-c", WRITE, str(folder), str(REPO)],
        "audit": [python, "-m", "flows", "audit", str(folder)],
        "sha256sum_c": ["sha256sum", "--quiet", "-c", "SHA256SUMS"],
    }
    runs: dict[str, list[Run]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, command in steps.items():
            runs[name].append(measured(command, folder))
    return {name: median_run(found) for name, found in runs.items()}


def row(requests: int, folder: Path, rounds: int, generated: float | None) -> dict[str, object]:
    found = measure(folder, rounds)
    files = [p for p in folder.rglob("*") if p.is_file()]
    write, audit, peer = found["write_bundle"], found["audit"], found["sha256sum_c"]
    return {
        "requests": requests,
        "files": len(files),
        "mib": round(sum(p.stat().st_size for p in files) / 2**20, 1),
        "rounds": rounds,
        "generated_s": None if generated is None else round(generated, 1),
        "median_s": {k: round(v.seconds, 2) for k, v in found.items()},
        "median_cpu_s": {k: round(v.cpu_seconds, 2) for k, v in found.items()},
        "peak_rss_mib": {k: round(v.peak_rss_mib, 1) for k, v in found.items()},
        "audit_over_sha256sum": round(audit.seconds / peer.seconds, 1),
        "write_over_audit": round(write.seconds / audit.seconds, 2),
    }


HEADER = (
    f"{'requests':>9} {'files':>6} {'MiB':>8} {'write s':>8} {'cpu s':>7} {'RSS MiB':>8} "
    f"{'audit s':>8} {'cpu s':>7} {'RSS MiB':>8} {'sha256sum s':>11} {'audit/sum':>9} "
    f"{'write/audit':>11}"
)


def line(found: dict[str, object]) -> str:
    seconds, cpu, rss = found["median_s"], found["median_cpu_s"], found["peak_rss_mib"]
    assert isinstance(seconds, dict) and isinstance(cpu, dict) and isinstance(rss, dict)
    return (
        f"{found['requests']:>9} {found['files']:>6} {found['mib']:>8} "
        f"{seconds['write_bundle']:>8} {cpu['write_bundle']:>7} {rss['write_bundle']:>8} "
        f"{seconds['audit']:>8} {cpu['audit']:>7} {rss['audit']:>8} {seconds['sha256sum_c']:>11} "
        f"{found['audit_over_sha256sum']:>9} {found['write_over_audit']:>11}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=3, help="per size below 1 M; 1 M runs once")
    parser.add_argument("--workdir", type=Path, help="keep and reuse generated campaigns here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        print(HEADER, flush=True)
        table = []
        for requests in sizes:
            folder, generated = campaign_at(workdir, requests)
            rounds = 1 if requests >= 1_000_000 else args.rounds
            table.append(row(requests, folder, rounds, generated))
            print(line(table[-1]), flush=True)
    print(json.dumps(table))


if __name__ == "__main__":
    main()
