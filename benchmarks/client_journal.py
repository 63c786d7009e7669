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
the process's CPU per line beyond the idle run's (every mode lasts the same time,
so the ticker's own CPU cancels). The journal goes to `--dir` (default: the current
directory, i.e. a real disk).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from evidence.stats import quantile
from faceoff.files import JsonlAppender
from workload.journal import JournalWriter
from workload.outcome import RequestOutcome

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


async def measure(
    mode: str, folder: Path, lines: int, chunks: int
) -> tuple[list[float], float, float]:
    """Tick lateness (ms), lines per second and the process's CPU seconds over the run."""
    stop = asyncio.Event()
    started, cpu = time.perf_counter(), time.process_time()
    late, _ = await asyncio.gather(
        ticker(stop), journal(mode, folder / f"{mode}.jsonl", lines, outcome(chunks), stop)
    )
    return late, lines / (time.perf_counter() - started), time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=6 * BURST)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path())
    args = parser.parse_args()
    print(
        f"{'mode':7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'lines/s':>8} {'CPU µs/line':>12}"
    )
    idle_cpu = 0.0
    with tempfile.TemporaryDirectory(prefix=".faceoff-journal-", dir=args.dir) as tmp:
        for mode in ("idle", "thread", "burst", "inline"):
            runs = [
                asyncio.run(measure(mode, Path(tmp), args.lines, args.chunks))
                for _ in range(args.rounds)
            ]
            late = sorted(x for run, _, _ in runs for x in run)
            rate = statistics.median(r for _, r, _ in runs)
            cpu = statistics.median(c for _, _, c in runs)
            idle_cpu = cpu if mode == "idle" else idle_cpu
            per_line = f"{(cpu - idle_cpu) / args.lines * 1e6:12.1f}" if mode != "idle" else ""
            print(
                f"{mode:7} {quantile(late, 0.5):8.3f} {quantile(late, 0.99):8.3f} {max(late):8.3f} "
                f"{rate if mode != 'idle' else 0:8.1f} {per_line}",
                flush=True,
            )
    print(f"{args.rounds} rounds of {args.lines} lines ({args.chunks} chunk offsets each)")


if __name__ == "__main__":
    main()
