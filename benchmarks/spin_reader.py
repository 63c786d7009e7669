"""The compiled spinning reader as a `fidelity_peers` client: the physical limit of timing.

`benchmarks/spin_reader.c` (a few dozen lines of C, built at bench time with the system
compiler, `cc -O2`) keeps C keep-alive connections busy, spins on `epoll_wait(0)` and
stamps every `read()` with CLOCK_MONOTONIC as it returns: the earliest any userspace
reader can notice bytes, with nothing parsed on the way. Its stamps and send times are on
the truth server's clock (perf_counter_ns is CLOCK_MONOTONIC), so its error splits into
admission and delivery like faceoff's. Each content chunk is dated by the read that
delivered the end of its SSE event, as faceoff dates it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.peer_clients import PROMPT_WORDS, Client, ClientRun, Round, Seen, run_client

SOURCE = Path(__file__).with_name("spin_reader.c")
NAME = "spin reader"
EVENT = re.compile(rb"data: (.*?)\n\n", re.DOTALL)


def build(workdir: Path) -> Path | None:
    """The reader built into ``workdir``; None where there is no C compiler."""
    cc = shutil.which("cc")
    if cc is None:
        return None
    binary = workdir / "spin_reader"
    subprocess.run([cc, "-O2", "-o", str(binary), str(SOURCE)], check=True, capture_output=True)
    return binary


def bodies(r: Round) -> str:
    words = " ".join(["steady careful report on the lane"] * (PROMPT_WORDS // 6))
    rows = [
        {"model": "truth", "prompt": f"{r.tag} {i} {words}", "max_tokens": r.tokens}
        | {"stream": True, "ignore_eos": True}
        for i in range(r.requests)
    ]
    return "".join(json.dumps(row) + "\n" for row in rows)


def run_spin_reader(r: Round, binary: Path) -> ClientRun:
    body_path, out = r.workdir / f"{r.tag}-spin-bodies.jsonl", r.workdir / f"{r.tag}-spin.out"
    body_path.write_text(bodies(r))
    url = urlsplit(r.url)
    command = [str(binary), url.hostname or "127.0.0.1", str(url.port), "/v1/completions"]
    run_client(r, [*command, str(r.concurrency), str(body_path), str(out)])
    run = ClientRun()
    for send_ns, reads, raw in answers(out.read_bytes()):
        seen = seen_of(send_ns, reads, raw)
        if seen is None:
            run.failed += 1
        else:
            run.seen.append(seen)
    return run


def answers(data: bytes) -> list[tuple[int, list[tuple[int, int]], bytes]]:
    """(send_ns, [(read_ns, end offset)], raw answer) of each request in the reader's output."""
    found, at = [], 0
    while at < len(data):
        head_end = data.index(b"\n", at)
        _, send_ns, size, count = map(int, data[at:head_end].split())
        at, reads = head_end + 1, []
        for _ in range(count):
            line_end = data.index(b"\n", at)
            ns, end = map(int, data[at:line_end].split())
            reads.append((ns, end))
            at = line_end + 1
        found.append((send_ns, reads, data[at : at + size]))
        at += size + 1
    return found


def seen_of(send_ns: int, reads: list[tuple[int, int]], raw: bytes) -> Seen | None:
    """The content chunks' arrivals, each by the read that delivered its event's end."""
    chunks: list[int] = []
    serial: int | None = None
    for match in EVENT.finditer(raw):
        if match.group(1) == b"[DONE]":
            continue
        choices = json.loads(match.group(1)).get("choices") or [{}]
        text = choices[0].get("text") or ""
        if text:
            serial = serial if serial is not None else int(text.strip().removeprefix("s"))
            chunks.append(next(ns for ns, end in reads if end >= match.end()))
    if not chunks or serial is None:
        return None
    offsets = [(ns - send_ns) / 1e9 for ns in chunks]
    return Seen(serial, offsets[0], offsets[-1], offsets, send_ns)


def spin_reader(workdir: Path) -> Client | None:
    """The reader as a client, where it builds."""
    binary = build(workdir)
    return None if binary is None else lambda r: run_spin_reader(r, binary)
