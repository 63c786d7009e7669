"""Does journaling stall the client's event loop? Writer thread vs fsync on the loop.

    .venv/bin/python -m benchmarks.client_journal [--lines 192] [--chunks 300] [--dir .]

An event loop runs a 1 ms ticker and records how late each tick fires (what a
chunk read would suffer). Meanwhile journal lines (a RequestOutcome with `--chunks`
chunk offsets) are journaled, in four ways:

- idle: nothing is journaled (the peer: the host's own noise);
- thread: `workload.journal.JournalWriter` (queue → thread → write, fsync), a line
  every 10 ms;
- burst: the same writer, 32 lines at once every 320 ms (a C32 wave ending together);
- inline: append + flush + fsync called on the event loop, a line every 10 ms.

Printed: tick lateness p50/p99/max in ms, the lines per second each way wrote, and
CPU per line: the event loop's thread beyond the idle run's (every mode lasts the
same time, so the ticker's own CPU cancels; noisy on a loaded host), and every other
thread's (the writer's; the close's helper thread too, once per run). The journal
goes to `--dir` (default: the current directory, i.e. a real disk).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evidence.stats.bootstrap import quantile
from faceoff.files import JsonlAppender
from faceoff.formats.attempt.journal import RequestOutcome
from workload.journal import JournalWriter

TICK_S = 0.001
LINE_EVERY_S = 0.010
BURST = 32


def outcome(chunks: int) -> RequestOutcome:
    """A typical ok line with ``chunks`` chunk offsets."""
    sha = "0" * 64
    return RequestOutcome.model_validate(
        {
            **dict.fromkeys(["cell_id", "arm", "client_run", "canary"], "x"),
            **dict.fromkeys(["plan_sha256", "prompt_sha256", "wire_sha256", "output_sha256"], sha),
            **dict.fromkeys(["response_id", "error", "contract_words", "marker_expected"]),
            **dict.fromkeys(["marker_found", "headers_ns", "first_content_ns"]),
            **dict.fromkeys(["first_event_ns", "usage_ns", "done_ns"]),
            "attempt": 1,
            "phase": "scored",
            "index": 0,
            "stream": 0,
            "role": "single",
            "status": "ok",
            "finish_reason": "stop",
            "http_status": 200,
            "target_input_tokens": 1000,
            "input_tokens": 1000,
            "max_tokens": chunks,
            "usage": {"prompt_tokens": 1000, "completion_tokens": chunks},
            "wall_anchor_utc": datetime.now(UTC),
            "mono_anchor_ns": 0,
            "due_ns": 0,
            "send_ns": 0,
            "first_output_ns": 1,
            "last_token_ns": 2,
            "end_ns": 3,
            "events": chunks + 3,
            "chunk_offsets_us": [5000 * k for k in range(chunks)],
            "chunk_kinds": "c" * chunks,
            "output_chars": 4 * chunks,
            "output_words": chunks,
            "output_excerpt": "word " * 200,
            "reasoning_chars": 0,
            "refusal": False,
        }
    )


async def ticker(stop: asyncio.Event) -> list[float]:
    late: list[float] = []
    due = time.perf_counter() + TICK_S
    while not stop.is_set():
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        late.append((time.perf_counter() - due) * 1000)
        due += TICK_S
    return late


async def journal(
    mode: str, path: Path, lines: int, line: RequestOutcome, stop: asyncio.Event
) -> None:
    writer = JournalWriter(path) if mode in ("thread", "burst") else None
    appender = JsonlAppender(path) if mode == "inline" else None
    group = BURST if mode == "burst" else 1
    for _ in range(lines // group):
        await asyncio.sleep(LINE_EVERY_S * group)
        for _ in range(group):
            if writer is not None:
                writer.submit(line)
            elif appender is not None:
                appender.append(line)
    if writer is not None:
        await asyncio.to_thread(writer.close)
    if appender is not None:
        appender.close()
    stop.set()


@dataclass(frozen=True)
class Run:
    late_ms: list[float]
    lines_per_s: float
    loop_cpu_s: float  # the event loop's thread
    other_cpu_s: float  # every other thread: the journal writer


async def measure(mode: str, folder: Path, lines: int, chunks: int) -> Run:
    stop = asyncio.Event()
    started, cpu, loop_cpu = time.perf_counter(), time.process_time(), time.thread_time()
    late, _ = await asyncio.gather(
        ticker(stop), journal(mode, folder / f"{mode}.jsonl", lines, outcome(chunks), stop)
    )
    loop_cpu = time.thread_time() - loop_cpu
    rate = lines / (time.perf_counter() - started)
    return Run(late, rate, loop_cpu, time.process_time() - cpu - loop_cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=6 * BURST)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path())
    args = parser.parse_args()
    print(
        f"{'mode':7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'lines/s':>8} "
        f"{'loop CPU µs/line':>17} {'writer CPU µs/line':>19}"
    )
    idle_loop = 0.0
    with tempfile.TemporaryDirectory(prefix=".faceoff-journal-", dir=args.dir) as tmp:
        for mode in ("idle", "thread", "burst", "inline"):
            runs = [
                asyncio.run(measure(mode, Path(tmp), args.lines, args.chunks))
                for _ in range(args.rounds)
            ]
            late = sorted(x for run in runs for x in run.late_ms)
            rate = statistics.median(r.lines_per_s for r in runs)
            loop = statistics.median(r.loop_cpu_s for r in runs)
            other = statistics.median(r.other_cpu_s for r in runs)
            idle_loop = loop if mode == "idle" else idle_loop
            loop_us, writer_us = (loop - idle_loop) / args.lines * 1e6, other / args.lines * 1e6
            per_line = "" if mode == "idle" else f"{loop_us:17.1f} {writer_us:19.1f}"
            print(
                f"{mode:7} {quantile(late, 0.5):8.3f} {quantile(late, 0.99):8.3f} {max(late):8.3f} "
                f"{rate if mode != 'idle' else 0:8.1f} {per_line}",
                flush=True,
            )
    print(f"{args.rounds} rounds of {args.lines} lines ({args.chunks} chunk offsets each)")


if __name__ == "__main__":
    main()
