"""Client timing fidelity against an independent truth server, next to two peer clients
and the physical limit.

    make bench NAME=fidelity_peers [ARGS="--requests 200 --modes pinned,unpinned"]
    .venv/bin/python -m benchmarks.fidelity_peers [--concurrency 1,4,32] [--requests 200]
        [--rounds 4] [--tokens 100] [--rate 200] [--prefill-ms 50] [--modes pinned,unpinned]
        [--clients faceoff,"faceoff spin","spin reader","vllm bench",guidellm]

The server is `benchmarks.truth_server`: standard library only, sharing no code with
faceoff's client or simulator. It records, in perf_counter_ns, when each request
arrived (the kernel's receive stamp of its body) and when each content chunk was
handed to the socket. The clients (`benchmarks.peer_clients`: faceoff, `vllm bench
serve` 0.32, guidellm 0.8) run in alternating order each round, the same requests.

Two modes, in one run: **pinned** (the server on core 0, each client on core 1, as on a
GPU host where the engine does not compete with the client for a CPU) and **unpinned**
(the scheduler's choice). Every C gets `--requests` requests per client and mode (at
least 200, split over the rounds), so a p99 rests on at least two values above it.

Every error is a duration the client reported minus the same duration on the server,
so no client's clock needs to agree with the server's: TTFT error = (client's first
content − its send) − (server's first content write − request arrival); last-token
error the same for the last content chunk; per-chunk error for every content chunk's
offset from the send (faceoff and vllm bench keep chunk times; guidellm keeps first
and last); decode error the relative error of (tokens − 1) / (last − first). Printed
per mode, C and client: n and the p50 and p99 of each (one percentile method for all,
named in the output; a p99 over fewer than 200 values is not printed), then the
headline: each p99 of faceoff against the best peer's, and the targets (pinned: each
p99 ≤ ½ the best peer's and ≤ 5 ms; C32 last-token p99 ≤ 2 × faceoff's TTFT p99, or ≤ 1 ms
where that is less: with kernel stamps a TTFT p99 can be 10 µs, and twice 10 µs bounds
nothing a client does; 1 ms is the bare timer's stall threshold, below which a late read is
the host's scheduling, and a C32 wave's finish bookkeeping on the loop, the fault the check
is for, costs several ms).

``--before TREE``: faceoff's client from an earlier source tree too ("faceoff before", not a
peer), in the rotation of every round; its CPU per request beside this tree's, per mode and
C and over all rounds paired (the geometric mean of the per-round ratios with its 95 %
interval): whether the client's CPU per request rose.

On a shared host the tail is set by stalls of the whole client process (a chunk the
client could not read for 10 ms is 10 ms late, however it is stamped). A bare 1 ms
timer process (`client_fidelity --probe`) runs on the clients' core(s) throughout;
for faceoff (whose send times share the server's clock) the output says how many
chunks more than 2 ms late overlapped a stall that timer saw too.

The physical limit runs in the same rounds: `benchmarks.spin_reader`, a few dozen lines
of C built at bench time with `cc`, spinning on epoll and stamping at `read()` (never a
peer). For every client with absolute monotonic stamps (faceoff, the spin reader) the
error is split into admission (the server's queueing) and delivery (the client's
lateness; `benchmarks.delivery_split`), and faceoff's delivery p99 of the first and the
last token is printed as a ratio to the spin reader's (target ≤ 2×), with how many of
faceoff's first tokens came more than half an inter-token gap late: for its default
receive mode ("faceoff", sleeping in the loop's select) and, in the same rounds, its
spinning one ("faceoff spin", ``--receive spin``), each with its CPU per request.

Then a second truth server that never names a finish_reason (usage and [DONE] only),
C4, pinned: how many of each client's requests it counted as answered.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.delivery_split import LIMIT, SPLIT_HEADER, Split, delivery_lines, split_rows
from benchmarks.peer_clients import BEFORE, SPIN, Client, ClientRun, Round, Seen, clients, taskset
from benchmarks.percentiles import MIN_P99, PERCENTILES, figure, pair, pct
from benchmarks.spin_reader import spin_reader
from evidence.stats import student_t

REPO = Path(__file__).resolve().parents[1]
MODEL = "truth"
BOOT_S = 60.0
TARGET_MS, TARGET_SHARE, LAST_OVER_TTFT = 5.0, 0.5, 2.0
LAST_FLOOR_MS = 1.0  # C32 last-token p99 is held to 2 × TTFT p99 or this, the larger
OURS = frozenset({"faceoff", SPIN, BEFORE, LIMIT})  # never a peer
LATE_NS = 2_000_000  # a chunk this late is checked against the timer's stalls
MODES = {"pinned": (0, frozenset({1})), "unpinned": (None, None)}  # server core, client cores


@dataclass
class Errors:
    """One client's errors at one C and mode, in ms (decode in %)."""

    ttft_ms: list[float] = field(default_factory=list)
    last_ms: list[float] = field(default_factory=list)
    chunk_ms: list[float] = field(default_factory=list)
    decode_pct: list[float] = field(default_factory=list)
    failed: int = 0
    notes: Counter[str] = field(default_factory=Counter)
    cpu_s: list[float] = field(default_factory=list)
    late: list[tuple[int, int]] = field(default_factory=list)  # (written, read) > 2 ms apart
    split: Split = field(default_factory=Split)  # admission and delivery, where stamps allow

    def add(self, seen: Seen, truth: dict[str, Any]) -> None:
        arrival, served = truth["arrival_ns"], truth["chunks_ns"]
        self.split.add(seen, truth)
        self.ttft_ms.append((seen.ttft_s * 1e9 - (served[0] - arrival)) / 1e6)
        self.last_ms.append((seen.last_s * 1e9 - (served[-1] - arrival)) / 1e6)
        if seen.chunk_s:
            self.chunk_ms += [
                (s * 1e9 - (t - arrival)) / 1e6 for s, t in zip(seen.chunk_s, served, strict=True)
            ]
        if seen.send_ns is not None:
            read = [seen.send_ns + round(s * 1e9) for s in seen.chunk_s]
            self.late += [(t, r) for t, r in zip(served, read, strict=True) if r - t > LATE_NS]
        if seen.last_s > seen.ttft_s:  # else all in one read: no decode rate to compare
            n = len(served) - 1
            client = n / (seen.last_s - seen.ttft_s)
            self.decode_pct.append(100 * (client / (n * 1e9 / (served[-1] - served[0])) - 1))

    def take(self, run: ClientRun, truth: dict[int, dict[str, Any]]) -> None:
        for seen in run.seen:
            self.add(seen, truth[seen.serial])
        self.failed += run.failed
        self.notes.update(run.notes)
        if run.cpu_s is not None:
            self.cpu_s.append(run.cpu_s / (len(run.seen) + run.failed))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def truth_server(
    log: Path, args: argparse.Namespace, cpu: int | None, **flags: bool
) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.truth_server", "--port", str(port)]
    command += ["--rate", str(args.rate), "--prefill-ms", str(args.prefill_ms)]
    command += ["--log", str(log), "--model", MODEL]
    command = taskset(None if cpu is None else frozenset({cpu})) + command
    command += ["--no-finish-reason"] if flags.get("no_finish_reason") else []
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + BOOT_S
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the truth server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def read_truth(log: Path) -> dict[int, dict[str, Any]]:
    return {rec["serial"]: rec for rec in map(json.loads, log.read_text().splitlines())}


HEADER = (
    "mode       C client          n  fail   TTFT err ms      last err ms     chunk err ms "
    "   decode err %\n"
    "                                       p50     p99      p50     p99      p50     p99 "
    "    |p50|   |p99|"
)


def row(mode: str, c: int, name: str, e: Errors) -> str:
    decode = [abs(x) for x in e.decode_pct]
    return (
        f"{mode:8} {c:>3} {name:14} {len(e.ttft_ms):>4} {e.failed:>5}  {pair(e.ttft_ms)}  "
        f"{pair(e.last_ms)}  {pair(e.chunk_ms)}  {pair(decode)}"
    )


METRICS = {"TTFT": "ttft_ms", "last": "last_ms", "chunk": "chunk_ms"}


def headline(mode: str, c: int, errors: dict[str, Errors]) -> list[str]:
    """Each p99 of faceoff against the best peer's, and the targets where pinned."""
    ours = errors["faceoff"]
    parts, checks = [], []
    for label, name in METRICS.items():
        mine = pct(getattr(ours, name), 0.99)
        peers = {p: pct(getattr(e, name), 0.99) for p, e in errors.items() if p not in OURS}
        known = {p: v for p, v in peers.items() if v is not None}
        best = min(known.items(), key=lambda kv: kv[1]) if known else None
        ratio = f" = {mine / best[1]:.2f}×" if mine is not None and best else ""
        against = f" vs {best[0]} {best[1]:.2f}" if best else " (no peer)"
        shown = f"{mine:.2f}" if mine is not None else f"— (n < {MIN_P99})"
        parts.append(f"{label} {shown}{against}{ratio}")
        if mode == "pinned" and mine is not None:
            bound = min(TARGET_MS, TARGET_SHARE * best[1]) if best else TARGET_MS
            checks.append(f"{label} {'met' if mine <= bound else 'MISSED'} (≤ {bound:.2f})")
    if mode == "pinned" and c == 32:
        ttft, last = pct(ours.ttft_ms, 0.99), pct(ours.last_ms, 0.99)
        if ttft is not None and last is not None:
            bound = max(LAST_OVER_TTFT * ttft, LAST_FLOOR_MS)
            met = "met" if last <= bound else "MISSED"
            checks.append(f"last ≤ max(2×TTFT, {LAST_FLOOR_MS:g} ms) {met} ({last:.2f} vs "
                          f"{bound:.2f})")  # fmt: skip
    lines = [f"{mode} C{c} p99 ms, faceoff vs best peer: " + "; ".join(parts)]
    return lines + ([f"{mode} C{c} targets: " + "; ".join(checks)] if checks else [])


@contextlib.contextmanager
def stall_timer(cpus: frozenset[int] | None, stalls: list[tuple[int, int]]) -> Iterator[None]:
    """A bare 1 ms timer process on the clients' cores; its late wake-ups land in ``stalls``."""
    command = [*taskset(cpus), sys.executable, "-m", "benchmarks.client_fidelity", "--probe"]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        stalls += [(due, woke) for due, woke in json.loads(out or "[]")]


def during_stalls(late: list[tuple[int, int]], stalls: list[tuple[int, int]]) -> int:
    """Late chunks whose wait overlapped a stall the timer saw too."""
    return sum(any(due < read and woke > written for due, woke in stalls) for written, read in late)


def measure(
    mode: str, c: int, args: argparse.Namespace, workdir: Path, runners: dict[str, Client]
) -> tuple[dict[str, Errors], list[float], list[tuple[int, int]]]:
    """Each client's errors at C in this mode, the server's read lag (ms) per request, and
    the stalls the bare timer saw."""
    server_cpu, client_cpus = MODES[mode]
    log = workdir / f"truth-{mode}-c{c}.jsonl"
    errors = {name: Errors() for name in runners}
    per_round = -(-args.requests // args.rounds)
    stalls: list[tuple[int, int]] = []
    with truth_server(log, args, server_cpu) as url, stall_timer(client_cpus, stalls):
        for k in range(args.rounds):
            r = Round(url, workdir, c, per_round, args.tokens, f"{mode}-c{c}-r{k}", client_cpus)
            names = list(runners)
            order = names[k % len(names) :] + names[: k % len(names)]
            runs = {name: runners[name](r) for name in order}
            truth = read_truth(log)
            for name, run in runs.items():
                errors[name].take(run, truth)
    lag = [(t["read_ns"] - t["arrival_ns"]) / 1e6 for t in read_truth(log).values()]
    return errors, lag, stalls


def accepted(args: argparse.Namespace, workdir: Path, runners: dict[str, Client]) -> str:
    """Against a server that never names a finish_reason: each client's answered requests."""
    server_cpu, client_cpus = MODES["pinned"]
    with truth_server(
        workdir / "truth-unnamed.jsonl", args, server_cpu, no_finish_reason=True
    ) as url:
        r = Round(url, workdir, 4, args.unnamed_requests, args.tokens, "unnamed", client_cpus)
        runs = {name: client(r) for name, client in runners.items()}
    parts = []
    for name, run in runs.items():
        notes = (
            f" ({', '.join(f'{k} {v}' for k, v in sorted(run.notes.items()))})" if run.notes else ""
        )
        parts.append(f"{name} {len(run.seen)} of {len(run.seen) + run.failed}{notes}")
    return "server without finish_reason (C4, pinned), answered: " + "; ".join(parts)


def faceoff_facts(
    where: str, name: str, e: Errors, lag: list[float], stalls: list[tuple[int, int]]
) -> str:
    cpu = f"{1000 * statistics.median(e.cpu_s):.2f}" if e.cpu_s else "n/a"
    notes = ", ".join(f"{k} {v}" for k, v in sorted(e.notes.items()))
    return (
        f"{where}: {name} CPU ms/request {cpu} ({notes}); chunks > 2 ms late "
        f"{len(e.late)} of {len(e.chunk_ms)}, {during_stalls(e.late, stalls)} of them during "
        f"a stall of the bare timer ({len(stalls)} stalls > 1 ms); server read lag ms "
        f"p50 {figure(pct(lag, 0.5), 0).strip()} p99 {figure(pct(lag, 0.99), 0).strip()}"
    )


def cpu_pairs(errors: dict[str, Errors]) -> list[tuple[float, float]]:
    """(this tree's, the earlier tree's) CPU seconds per request, round by round."""
    if BEFORE not in errors:
        return []
    return list(zip(errors["faceoff"].cpu_s, errors[BEFORE].cpu_s, strict=True))


def cpu_line(label: str, pairs: list[tuple[float, float]]) -> str:
    """Medians of each tree's CPU per request, their ratio, and the per-round ratios'
    geometric mean with its 95 % t interval (rounds are paired: same server, same hour)."""
    now, then = (statistics.median(side) * 1000 for side in zip(*pairs, strict=True))
    logs = [math.log(a / b) for a, b in pairs]
    centre = statistics.fmean(logs)
    said = f"geometric mean of {len(logs)} per-round ratios {math.exp(centre):.3f}×"
    if len(logs) > 1:
        half = student_t.quantile(0.95, len(logs) - 1) * statistics.stdev(logs) / len(logs) ** 0.5
        said += f" [{math.exp(centre - half):.3f}, {math.exp(centre + half):.3f}]"
    below = sum(x < 0 for x in logs)
    return (
        f"{label}: client CPU ms/request, this tree vs before: median {now:.3f} vs {then:.3f} "
        f"({now / then:.3f}×); {said}; {below} of {len(logs)} rounds lower"
    )


def every_client(workdir: Path, names: list[str], before: Path | None) -> dict[str, Client]:
    """faceoff, the peers installed here, and the spin reader where it builds."""
    runners = clients(workdir, names, before)
    if LIMIT in names and (reader := spin_reader(workdir)) is not None:
        runners[LIMIT] = reader
    return runners


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="1,4,32")
    parser.add_argument("--requests", type=int, default=MIN_P99, help="per client, C and mode")
    parser.add_argument("--rounds", type=int, default=4, help="order rotated each round")
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--rate", type=float, default=200.0, help="server tokens/s per stream")
    parser.add_argument("--prefill-ms", type=float, default=50.0, help="server time to first")
    parser.add_argument("--modes", default="pinned,unpinned")
    parser.add_argument("--unnamed-requests", type=int, default=40)
    parser.add_argument("--clients", default=f"faceoff,{SPIN},{LIMIT},vllm bench,guidellm")
    parser.add_argument("--keep", type=Path, help="keep plans, journals and records here")
    parser.add_argument("--before", type=Path, help="an earlier faceoff source tree, for CPU")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="faceoff-fidelity-peers-") as tmp:
        workdir = (args.keep or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        runners = every_client(workdir, args.clients.split(","), args.before)
        print(f"percentiles: {PERCENTILES}; a p99 over fewer than {MIN_P99} values: —")
        print(HEADER, flush=True)
        summary: list[str] = []
        splits: list[str] = []
        paired: list[tuple[float, float]] = []
        for mode in args.modes.split(","):
            for c in (int(x) for x in args.concurrency.split(",")):
                errors, lag, stalls = measure(mode, c, args, workdir, runners)
                for name, e in errors.items():
                    print(row(mode, c, name, e), flush=True)
                by_client = {name: e.split for name, e in errors.items()}
                splits += split_rows(mode, c, by_client)
                facts = [
                    faceoff_facts(f"{mode} C{c}", name, errors[name], lag, stalls)
                    for name in ("faceoff", SPIN)
                    if name in errors
                ]
                delivery = delivery_lines(mode, c, by_client, gap_ms=1000 / args.rate)
                summary += [*headline(mode, c, errors), *facts, *delivery]
                if pairs := cpu_pairs(errors):
                    summary.append(cpu_line(f"{mode} C{c}", pairs))
                    paired += pairs
        if paired:
            summary.append(cpu_line("every mode and C", paired))
        summary.append(accepted(args, workdir, runners))
    print("\n".join([SPLIT_HEADER, *splits, *summary]))
    print(
        f"{args.rounds} rounds per C and mode, order rotated; {args.tokens} tokens at "
        f"{args.rate:g} tok/s per stream after {args.prefill_ms:g} ms; clients: "
        f"{', '.join(runners)}; load avg {load_before:.1f} before, {os.getloadavg()[0]:.1f} "
        f"after; host cores: {os.cpu_count()}"
    )


if __name__ == "__main__":
    main()
