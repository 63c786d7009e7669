"""Engine sampling cadence with and without a C32 streaming cell, against the simulator.

    .venv/bin/python -m benchmarks.collector_cadence [--seconds 60] [--repeats 1]
        [--period 0.5] [--concurrency 32] [--max-tokens 256] [--profile tiny]

One simulator lane (its own process) serves the whole run. Each repeat has two
phases of ``--seconds``: idle (no requests), then loaded (``--concurrency``
closed-loop streams from a separate client process, as a cell's client runs).
Around each phase the cell collectors run exactly as the flow runs them
(engine every ``--period`` s, host every 2 s, in threads of this process).
From the written samples the telemetry summary gives each phase's engine
cadence: start-minus-schedule deviation p50/p99/max, late and missed ticks; the
samples give scrape latency.

Peers measured in the same run: the idle phase, and in every phase a bare timer
(the same cadence loop driving a sampler that does nothing) in a separate
process, which shows how late this machine wakes any thread at that moment
(other processes, hypervisor steal) apart from anything the collectors do.
Printed: per phase the median over repeats, the loaded/idle ratio of the p99
deviation, the collector/bare-timer ratio, and whether the loaded p99 is within
20 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path

import psutil

from collectors.cadence import nearest_rank
from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from collectors.sampler import SamplerLoop, Tick
from collectors.settings import CollectorSettings
from collectors.telemetry import load_cell_samples, summarize
from faceoff.formats.attempt.stalls import CellWindow
from simulator.launch import SimServer, running

TARGET_P99_MS = 20.0


@dataclass
class Phase:
    ticks: float
    late: float
    missed: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    scrape_p50_ms: float
    scrape_p99_ms: float
    bare_p99_ms: float  # the bare-timer peer, same period, same moment
    cpu_percent: float  # this process (the collectors), percent of one core
    requests: float


class Nothing:
    """A sampler that takes nothing: the cadence loop alone."""

    name = "bare"

    def __init__(self) -> None:
        self.deviations: list[int] = []

    def open(self) -> None:
        pass

    def take(self, tick: Tick) -> None:
        if not tick.final:
            self.deviations.append(tick.deviation_ns)

    def close(self) -> None:
        pass


def bare_timer(seconds: float, period_s: float) -> list[int]:
    sampler = Nothing()
    settings = CollectorSettings(engine_period_s=period_s)
    period = settings.engine_period_ns
    loop = SamplerLoop(sampler, period_ns=period, late_after_ns=settings.late_after_ns(period))
    loop.start()
    time.sleep(seconds)
    loop.stop()
    return sampler.deviations


def start_peer(seconds: float, period_s: float) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "benchmarks.collector_cadence", "--bare-timer"]
    command += ["--seconds", str(seconds), "--period", str(period_s)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def peer_p99_ms(peer: subprocess.Popen[str]) -> float:
    out, _ = peer.communicate(timeout=600)
    return (nearest_rank(sorted(json.loads(out)), 99) or 0) / 1e6


def collect(
    sim: SimServer,
    folder: Path,
    settings: CollectorSettings,
    load: list[str] | None,
    seconds: float,
) -> Phase:
    cell = CellCollectors(
        metrics_url=sim.url + "/metrics",
        target=MemoryTarget(pid=sim.process.pid),
        gpu_ids=[],
        folder=folder,
        settings=settings,
    )
    me = psutil.Process()
    cell.start()
    peer = start_peer(seconds, settings.engine_period_s)
    cpu0, wall0 = sum(me.cpu_times()[:2]), time.perf_counter()
    start, end, requests = run_phase(load, seconds)
    cpu = (sum(me.cpu_times()[:2]) - cpu0) / (time.perf_counter() - wall0) * 100
    cell.stop()
    samples = load_cell_samples(folder)  # read once: for the summary and the scrape latencies
    window = CellWindow(start_ns=start, end_ns=end)
    summary = summarize(samples, window=window, settings=settings, table=cell.table)
    engine = samples.engine
    latencies = sorted(s.latency_ns for s in engine if start <= s.actual_ns <= end and not s.final)
    c = summary.engine.cadence
    return Phase(
        ticks=c.ticks,
        late=c.late,
        missed=c.missed,
        p50_ms=(c.deviation_p50_ns or 0) / 1e6,
        p99_ms=(c.deviation_p99_ns or 0) / 1e6,
        max_ms=(c.deviation_max_ns or 0) / 1e6,
        scrape_p50_ms=(nearest_rank(latencies, 50) or 0) / 1e6,
        scrape_p99_ms=(nearest_rank(latencies, 99) or 0) / 1e6,
        bare_p99_ms=peer_p99_ms(peer),
        cpu_percent=cpu,
        requests=requests,
    )


def run_phase(load: list[str] | None, seconds: float) -> tuple[int, int, int]:
    """The phase's window (first send, last end) and the requests it completed."""
    if load is None:
        start = time.perf_counter_ns()
        time.sleep(seconds)
        return start, time.perf_counter_ns(), 0
    done = subprocess.run(load, capture_output=True, text=True, check=True, timeout=seconds + 120)
    tally = json.loads(done.stdout.strip().splitlines()[-1])
    return tally["first_send_ns"], tally["last_end_ns"], tally["ok"]


def load_command(sim: SimServer, args: argparse.Namespace) -> list[str]:
    return [
        *(sys.executable, "-m", "benchmarks.collector_load", sim.url),
        *("--concurrency", str(args.concurrency), "--requests", "100000000"),
        *("--max-tokens", str(args.max_tokens), "--seconds", str(args.seconds)),
    ]


def median_phase(phases: list[Phase]) -> Phase:
    values = {
        f.name: float(statistics.median(getattr(p, f.name) for p in phases)) for f in fields(Phase)
    }
    return Phase(**values)


def table(rows: dict[str, Phase]) -> list[str]:
    lines = [
        f"{'phase':7} {'ticks':>5} {'late':>4} {'miss':>4} {'dev p50':>8} {'dev p99':>8} "
        f"{'dev max':>8} {'bare p99':>8} {'scrape p50':>10} {'scrape p99':>10} {'cpu %':>5} "
        f"{'requests':>8}"
    ]
    for name, r in rows.items():
        lines.append(
            f"{name:7} {r.ticks:5.0f} {r.late:4.0f} {r.missed:4.0f} {r.p50_ms:6.2f}ms "
            f"{r.p99_ms:6.2f}ms {r.max_ms:6.2f}ms {r.bare_p99_ms:6.2f}ms {r.scrape_p50_ms:8.2f}ms "
            f"{r.scrape_p99_ms:8.2f}ms {r.cpu_percent:5.1f} {r.requests:8.0f}"
        )
    return lines


def verdict(idle: Phase, loaded: Phase) -> list[str]:
    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x" if b else "n/a"

    within = "within" if loaded.p99_ms <= TARGET_P99_MS else "OVER"
    return [
        f"p99 deviation loaded/idle: {ratio(loaded.p99_ms, idle.p99_ms)}; "
        f"collector/bare timer: idle {ratio(idle.p99_ms, idle.bare_p99_ms)}, "
        f"loaded {ratio(loaded.p99_ms, loaded.bare_p99_ms)}",
        f"loaded p99 {loaded.p99_ms:.2f} ms is {within} the {TARGET_P99_MS:g} ms target "
        f"(the bare timer's loaded p99 was {loaded.bare_p99_ms:.2f} ms)",
    ]


def benchmark(args: argparse.Namespace) -> list[str]:
    settings = CollectorSettings(engine_period_s=args.period)
    sim_args = ["--set", f"engine.max_num_seqs={args.concurrency}"]
    idle: list[Phase] = []
    loaded: list[Phase] = []
    with (
        tempfile.TemporaryDirectory(prefix="faceoff-cadence-") as tmp,
        running(args.profile, args=sim_args) as sim,
    ):
        for repeat in range(args.repeats):
            base = Path(tmp) / f"repeat-{repeat}"
            idle.append(collect(sim, base / "idle", settings, None, args.seconds))
            command = load_command(sim, args)
            loaded.append(collect(sim, base / "loaded", settings, command, args.seconds))
    rows = {"idle": median_phase(idle), "loaded": median_phase(loaded)}
    head = (
        f"engine cadence {args.period:g} s, C{args.concurrency} streaming load, "
        f"{args.repeats} repeat(s) of {args.seconds:g} s per phase; medians over repeats"
    )
    return [head, *table(rows), *verdict(rows["idle"], rows["loaded"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--period", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--bare-timer", action="store_true", help="run only the peer; JSON out")
    args = parser.parse_args(argv)
    if args.bare_timer:
        print(json.dumps(bare_timer(args.seconds, args.period)))
        return 0
    for line in benchmark(args):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
