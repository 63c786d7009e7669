"""Fault suite: `faceoff run` under kills, lane and engine faults, a full disk, load.

    make bench NAME=faults                     # every scenario, then the table
    .venv/bin/python -m benchmarks.faults --list
    .venv/bin/python -m benchmarks.faults --only sigkill_resume,sigterm

Each scenario runs a small simulator campaign (two host-process simulator lanes on the
``tiny`` profile, as ``tests/e2e/matrices.py`` builds them; the incumbent's first cell at
real time so that a signal lands mid-cell) with ``faceoff run`` as a real subprocess and
its own ephemeral Prefect server, as an operator runs it, injects one fault and, where
the documented recovery is a second ``faceoff run`` (a resume), runs that too. Printed
per scenario: requests planned / journaled / lost (planned non-warmup requests of every
attempt folder that has a journal, minus that journal's lines), whether the incumbent is
restored (``receipt.json`` verified with outcome ``restored`` and the incumbent's
``/health`` answering 200), ``faceoff audit`` of the campaign folder, the exit code of
each ``faceoff run`` (``-9`` killed by SIGKILL), the exit codes docs/flows.md documents
for it, and the wall time. Every lane is torn down afterwards (``faceoff teardown``).
Needs root only for ``disk_full`` (a tmpfs mount).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from faceoff.formats.attempt.verdict import VERDICT_FILE, Outcome, Verdict
from faceoff.formats.lane import LaneRecord
from faceoff.formats.reasons import Reason
from faceoff.formats.receipt import verify_receipt
from flows.campaign.unjournaled import unjournaled
from lanes.leftovers import live_process_records
from lanes.process import is_same_process
from tests.e2e.matrices import arm, campaign, write_matrix
from tests.e2e.throwaway import throwaway_postgres, throwaway_registry

REPO = Path(__file__).resolve().parents[1]
FIRST_CELL, ARMS = "natural-600-c1", ("inc", "cand")
REQUESTS = 6  # per cell
SLOW = {"time_scale": 1.0}  # ~0.3 s per request: a signal lands mid-cell
RUN_TIMEOUT_S = 900.0  # a whole campaign took 240-460 s at load 12-17 on this host
SERVERLESS_WAIT_S = 600.0  # a run without its server must still end; at load 13 one took 227 s
HUNG = -999  # still running at its deadline: killed by the suite


@dataclass
class Row:
    scenario: str
    expected: str  # documented exit codes, e.g. "-9 → 0"
    exits: list[int] = field(default_factory=list)
    planned: int = 0
    journaled: int = 0
    named: int = 0  # not journaled, but named as not measured by the attempt's verdict
    restored: str = ""
    audit: str = ""
    reasons: str = ""  # why cell runs were not accepted (verdicts), e.g. "lane_exited×1"
    wall_s: float = 0.0
    tracebacks: int = 0  # Python tracebacks in what the runs printed
    note: str = ""
    named_where: list[str] = field(default_factory=list)  # "attempt folder: requests 3, 4"

    @property
    def lost(self) -> int:
        return self.planned - self.journaled - self.named

    @property
    def exit_text(self) -> str:
        return " → ".join("hung" if code == HUNG else str(code) for code in self.exits)

    @property
    def ok(self) -> bool:
        """The target: nothing lost (or the loss named by a verdict), restored, audit
        clean, the documented exit codes, no traceback."""
        return (
            self.lost == 0
            and self.restored.startswith("yes")
            and self.audit == "ok"
            and self.exit_text == self.expected
            and self.tracebacks == 0
        )


@dataclass
class Campaign:
    """One scenario's matrix, workdir and log; ``run`` starts `faceoff run` on it."""

    name: str
    folder: Path
    matrix: Path
    incumbent_port: int
    data: dict[str, Any]
    args: list[str] = field(default_factory=list)  # e.g. --db URL
    runs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def rewrite(self, arm_name: str, **fields: Any) -> None:
        """Change an arm of the matrix (before the first run)."""
        for entry in self.data["arms"]:
            if entry["name"] == arm_name:
                entry.update(fields)
        write_matrix(self.folder, self.data)

    @property
    def workdir(self) -> Path:
        return self.folder / "runs"

    @property
    def dir(self) -> Path:
        return self.workdir / self.name

    @property
    def log(self) -> Path:
        return self.folder / "run.log"

    def run(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "flows",
                    "run",
                    str(self.matrix),
                    "--workdir",
                    str(self.workdir),
                    *self.args,
                ],
                cwd=REPO,
                env=operator_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.runs.append(process)
        return process

    def journal(self, cell: str = FIRST_CELL, arm_name: str = "inc", attempt: int = 1) -> Path:
        return self.dir / "cells" / cell / arm_name / f"attempt-{attempt}" / "journal.jsonl"

    def faceoff(self, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flows", *args],
            check=False,
            cwd=REPO,
            env=operator_env(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )


def operator_env() -> dict[str, str]:
    """The environment without the Prefect settings the test helpers set on import:
    `faceoff run` then starts its own ephemeral server, as for an operator."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return env | {"COLUMNS": "160"}


def new_campaign(root: Path, name: str, **cand_fields: Any) -> Campaign:
    folder = root / name
    folder.mkdir(parents=True)
    incumbent = arm("inc", "incumbent", simulator=SLOW)
    data = campaign(name, [incumbent, arm("cand", "candidate", **cand_fields)])
    for cell in data["cells"]:
        cell |= {"requests": REQUESTS, "sampling": {"max_tokens": 64, "ignore_eos": True}}
    return Campaign(name, folder, write_matrix(folder, data), incumbent["port"], data)


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = RUN_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


def journal_lines(path: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        return sum(1 for line in path.read_text().splitlines() if line.endswith("}"))
    return 0


def mid_cell(
    c: Campaign, process: subprocess.Popen[bytes], arm_name: str = "inc"
) -> Callable[[], bool]:
    """True once the arm's first cell has two journal lines (or the run ended)."""
    journal = c.journal(arm_name=arm_name)
    return lambda: journal_lines(journal) >= 2 or process.poll() is not None


def finish(process: subprocess.Popen[bytes], timeout_s: float = RUN_TIMEOUT_S) -> int:
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return HUNG


def kill(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> int:
    process.send_signal(sig)
    return finish(process)


def children(pid: int, *words: str) -> list[psutil.Process]:
    """Descendants of ``pid`` whose command line holds every word."""
    found = []
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if all(any(w in part for part in child.cmdline()) for w in words):
                    found.append(child)
    return found


def settle_client(c: Campaign) -> None:
    """After a SIGKILL of `faceoff run`, its client journals the rest on its own."""
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: journal_lines(c.journal()) >= REQUESTS, "the orphaned client", 60.0)


# -- measurements ---------------------------------------------------------------------


def request_counts(campaign_dir: Path) -> tuple[int, int, int, list[str]]:
    """(planned, journaled, named, where): non-warmup requests of each attempt folder that
    ran, those without a journal line that the attempt's verdict names as not measured, and
    which those are ("cells/…/attempt-1: requests 3, 4")."""
    planned = journaled = named = 0
    where = []
    for journal in sorted(campaign_dir.glob("cells/*/*/attempt-*/journal.jsonl")):
        count, missing = unjournaled(journal.parent)
        planned, journaled = planned + count, journaled + count - len(missing)
        if missing and names_unjournaled(journal.parent / VERDICT_FILE):
            named += len(missing)
            folder = journal.parent.relative_to(campaign_dir)
            where.append(f"{folder}: requests {', '.join(map(str, missing))}")
    return planned, journaled, named, where


def names_unjournaled(path: Path) -> bool:
    """Whether the verdict at ``path`` says planned requests lack a journal line."""
    if not path.exists():
        return False
    verdict = Verdict.read(path)
    code = Reason.REQUESTS_NOT_TERMINAL
    return verdict.reason is code or any(
        r.code is code and r.outcome is Outcome.FAILED for r in verdict.rules
    )


def restored(c: Campaign) -> str:
    try:
        outcome = verify_receipt(c.dir / "receipt.json").outcome
    except Exception as error:  # any unreadable receipt is the answer
        return f"no: receipt {type(error).__name__}"
    try:
        url = f"http://127.0.0.1:{c.incumbent_port}/health"
        with urllib.request.urlopen(url, timeout=10) as answer:
            health = str(answer.status)
    except OSError as error:
        health = type(error).__name__
    ok = outcome == "restored" and health == "200"
    return f"{'yes' if ok else 'no'}: {outcome}, /health {health}"


def audit(c: Campaign) -> str:
    if not c.dir.is_dir():
        return "no campaign folder"
    done = c.faceoff("audit", str(c.dir))
    if done.returncode == 0:
        return "ok"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return f"exit {done.returncode}: {lines[-1][:70] if lines else ''}"


def reasons(campaign_dir: Path) -> str:
    """The reason code of every cell run a verdict did not accept, counted."""
    found: dict[str, int] = {}
    for path in campaign_dir.glob("cells/*/*/attempt-*/verdict.json"):
        verdict = json.loads(path.read_text())
        if verdict["disposition"] != "accepted":
            found[verdict["reason"]] = found.get(verdict["reason"], 0) + 1
    return ", ".join(f"{reason}×{n}" for reason, n in sorted(found.items())) or "-"


def measure(c: Campaign, row: Row) -> None:
    row.planned, row.journaled, row.named, row.named_where = request_counts(c.dir)
    row.tracebacks = tracebacks(c.log)
    row.reasons = reasons(c.dir)
    row.restored = restored(c)
    row.audit = audit(c)


def teardown(c: Campaign) -> None:
    for process in c.runs:
        if process.poll() is None:
            process.kill()
            process.wait()
    if c.dir.is_dir():
        with contextlib.suppress(subprocess.TimeoutExpired):
            c.faceoff("teardown", c.name, "--workdir", str(c.workdir))


# -- scenarios ------------------------------------------------------------------------


def sigkill_resume(c: Campaign, row: Row) -> None:
    first = c.run()
    wait_for(mid_cell(c, first), "two journal lines")
    row.exits.append(kill(first))
    settle_client(c)
    row.exits.append(finish(c.run()))


def sigterm(c: Campaign, row: Row) -> None:
    first = c.run()
    wait_for(mid_cell(c, first), "two journal lines")
    row.exits.append(kill(first, signal.SIGTERM))
    row.note = f"on exit: {restored(c)}; then resumed"
    row.exits.append(finish(c.run()))


def sigkill_lane_boot(c: Campaign, row: Row) -> None:
    first = c.run()
    wait_for(lambda: any(c.dir.glob("lanes/inc/*/lane.json")), "the incumbent lane record")
    row.exits.append(kill(first))
    row.exits.append(finish(c.run()))


def sigkill_restore_boot(c: Campaign, row: Row) -> None:
    """SIGKILL while the restoration after the cells boots the incumbent's restore lane
    (recorded in its lane.json, its engine starting), then a resume: the lane is found by
    its record and stopped, and the incumbent brought back on its port."""
    first = c.run()
    booting = lambda: any(c.dir.glob("lanes/inc/restore-*/lane.json"))  # noqa: E731
    wait_for(lambda: booting() or first.poll() is not None, "the restore lane's record")
    if first.poll() is not None:
        row.note = "the run ended before its restore lane was recorded: no kill"
    row.exits.append(kill(first))
    records = [LaneRecord.read(p) for p in sorted(c.dir.glob("lanes/inc/restore-*/lane.json"))]
    state = {True: "alive", False: "gone"}
    alive = [f"{r.run} pid {r.pid} {state[is_same_process(r.pid or 0, r.pid_started_at)]}"
             for r in records]  # fmt: skip
    row.note = row.note or (
        f"after the kill: recorded {', '.join(alive) or 'none'}; on the port: "
        f"{listener(c.incumbent_port)}; resumed"
    )
    row.exits.append(finish(c.run()))


def listener(port: int) -> str:
    """What listens on ``port`` (a pid and its program), or "nothing"."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            with contextlib.suppress(psutil.Error):
                return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
    return "nothing"


def sigkill_warmups(c: Campaign, row: Row) -> None:
    first = c.run()
    warming = lambda: bool(children(first.pid, "workload.cell_client"))  # noqa: E731
    kill_when(c, row, first, warming, "the warmup client")


def sigkill_between_cells(c: Campaign, row: Row) -> None:
    first = c.run()
    record = c.journal().parent / "cell.json"
    kill_when(c, row, first, record.exists, "the first cell's record")


def kill_when(
    c: Campaign, row: Row, first: subprocess.Popen[bytes], phase: Callable[[], bool], what: str
) -> None:
    """SIGKILL the run once ``phase`` holds, then resume; a run that ended before (a fast
    host) is said in the note instead of waited on until the suite's deadline."""
    wait_for(lambda: phase() or first.poll() is not None, what)
    if first.poll() is not None:
        row.note = f"the run ended before {what} was seen: no kill"
    row.exits.append(kill(first))
    row.exits.append(finish(c.run()))


def sigkill_restoration(c: Campaign, row: Row) -> None:
    first = c.run()
    records = lambda: len(list(c.dir.glob("cells/*/*/attempt-*/cell.json")))  # noqa: E731
    wait_for(lambda: records() == 4 or first.poll() is not None, "the last cell's record")
    row.exits.append(kill(first))
    restore = c.faceoff("restore", "--campaign", c.name, "--workdir", str(c.workdir))
    row.note = f"faceoff restore exit {restore.returncode}; then resumed"
    row.exits.append(finish(c.run()))


def sigkill_client(c: Campaign, row: Row) -> None:
    first = c.run()
    wait_for(mid_cell(c, first), "two journal lines")
    clients = children(first.pid, "workload.cell_client")
    for client in clients:
        client.kill()
    row.note = f"{len(clients)} client(s) killed"
    row.exits.append(finish(first))


def sigkill_lane(c: Campaign, row: Row) -> None:
    first = c.run()
    wait_for(mid_cell(c, first), "two journal lines")
    lanes = live_process_records(c.dir, arms=["inc"])
    for _, record in lanes:
        os.killpg(int(record.pid or 0), signal.SIGKILL)
    row.note = f"{len(lanes)} lane group(s) killed"
    row.exits.append(finish(first))


def sigkill_prefect_server(c: Campaign, row: Row) -> None:
    first = c.run()
    wait_for(mid_cell(c, first), "two journal lines")
    servers = children(first.pid, "uvicorn")
    for server in servers:
        server.kill()
    row.exits.append(finish(first, SERVERLESS_WAIT_S))
    row.note = f"{len(servers)} server process(es) killed mid-cell; {said_last(c, 'warning:')}"


def prefect_server_lost(c: Campaign, row: Row) -> None:
    """Mid-cell the run's Prefect home is removed (a cleanup job, a lost mount) and its
    server killed: the server cannot be started again; then a resume."""
    first = c.run()
    wait_for(mid_cell(c, first), "two journal lines")
    shutil.rmtree(c.workdir / ".prefect", ignore_errors=True)
    servers = children(first.pid, "uvicorn")
    for server in servers:
        server.kill()
    row.exits.append(finish(first, SERVERLESS_WAIT_S))
    row.note = f"{len(servers)} server(s) killed, home removed; {said_last(c)}"
    row.exits.append(finish(c.run()))


def engine_fault(c: Campaign, row: Row) -> None:
    """One run; the candidate's faults, if any, are in the matrix
    (``[arms.simulator.faults]``)."""
    row.exits.append(finish(c.run()))


def disk_full(c: Campaign, row: Row) -> None:
    """The workdir on an 8 MiB tmpfs, filled mid-cell; freed, then a resume. The preflight's
    disk check, which would refuse so small a disk, is waived: the disk fills up after."""
    c.args = ["--waive", "disk", "--reason", "a small disk on purpose"]
    c.workdir.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(c.workdir)], check=True)
    try:
        first = c.run()
        wait_for(mid_cell(c, first), "two journal lines")
        filler = c.workdir / "filler"
        fill(filler)
        row.exits.append(finish(first))
        row.note = f"{said_last(c)}; freed, resumed"
        filler.unlink()
        row.exits.append(finish(c.run()))
        measure(c, row)
        teardown(c)
    finally:
        subprocess.run(["umount", "-l", str(c.workdir)], check=False)


def fill(path: Path) -> None:
    """Write ``path`` until the file system has no byte left."""
    with path.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()


def two_runs(c: Campaign, row: Row) -> None:
    first, second = c.run(), c.run()
    row.exits += [finish(first), finish(second)]
    row.exits.sort()


def loaded_host(c: Campaign, row: Row) -> None:
    with busy_loops(os.cpu_count() or 1):
        row.exits.append(finish(c.run()))


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    loops = [multiprocessing.Process(target=spin, daemon=True) for _ in range(count)]
    for loop in loops:
        loop.start()
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.join()


def spin() -> None:
    while True:
        pass


def postgres_stopped(c: Campaign, row: Row) -> None:
    """The ledger on a PostgreSQL of its own, stopped mid-cell (immediate shutdown), started
    again, then a resume."""
    with throwaway_postgres() as (url, pg_ctl):
        c.args = ["--db", url]
        first = c.run()
        wait_for(mid_cell(c, first), "two journal lines")
        subprocess.run([*pg_ctl, "-m", "immediate", "stop"], check=True, capture_output=True)
        row.exits.append(finish(first))
        row.note = f"{said_last(c)}; PostgreSQL started again, resumed"
        subprocess.run([*pg_ctl, "-w", "start"], check=True, capture_output=True)
        row.exits.append(finish(c.run()))
        measure(c, row)
        teardown(c)


def registry_down(c: Campaign, row: Row) -> None:
    """Both arms Docker lanes of the simulator image, pulled by digest from a registry of
    this scenario's own (a copy of the local one's storage, hard links), stopped mid-cell:
    the restoration after the cells runs with no registry."""
    image = sim_image()
    with throwaway_registry(c.folder / "registry") as (address, registry):
        moved = image.replace(image.split("/", 1)[0], address, 1)
        for name in ARMS:
            c.rewrite(name, lane="docker", image=moved)
        try:
            first = c.run()
            wait_for(mid_cell(c, first), "two journal lines")
            registry.terminate()
            registry.wait()
            row.note = f"registry {address} stopped mid-cell"
            row.exits.append(finish(first))
            measure(c, row)
            teardown(c)
        finally:
            subprocess.run(["docker", "rmi", moved], check=False, capture_output=True)


def docker_oom(c: Campaign, row: Row) -> None:
    """The candidate a Docker lane under a memory limit; mid-cell a process in its container
    allocates past the limit and the kernel's OOM killer takes the engine (made its first
    choice), as it would take a real engine that outgrew its limit."""
    c.rewrite("cand", lane="docker", image=sim_image(), memory_limit=OOM_LIMIT)
    first = c.run()
    wait_for(mid_cell(c, first, "cand"), "two of the candidate's journal lines")
    [record] = [LaneRecord.read(p) for p in c.dir.glob("lanes/cand/*/lane.json")]
    container = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Pid}}", str(record.container_id)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    Path(f"/proc/{container.stdout.strip()}/oom_score_adj").write_text("1000\n")
    hog = ["docker", "exec", "-d", str(record.container_id), "python3", "-c", OOM_HOG]
    subprocess.run(hog, check=True, capture_output=True)
    row.note = f"a {OOM_LIMIT} container; its engine OOM-killed mid-cell"
    row.exits.append(finish(first))


def sim_image() -> str:
    image = os.environ.get("FACEOFF_SIM_IMAGE")
    if not image:
        raise RuntimeError("set FACEOFF_SIM_IMAGE to the simulator image (repo@sha256:...)")
    return image


def tracebacks(log: Path) -> int:
    """How many Python tracebacks the runs printed."""
    with contextlib.suppress(FileNotFoundError):
        return log.read_text(errors="replace").count("Traceback (most recent call last)")
    return 0


def said_last(c: Campaign, word: str = "error:") -> str:
    """The run's last line starting with ``word``, shortened."""
    text = c.log.read_text(errors="replace")
    said = [line for line in text.splitlines() if line.startswith(word)]
    return said[-1].strip()[:150] if said else f"no {word} line"


OOM_LIMIT = "256m"
OOM_HOG = "x = bytearray(512 << 20)"  # resident at once, past the limit
METRICS_500 = {"metrics_status": 500}
METRICS_GARBAGE = {"metrics_garbage": True}
METRICS_HANG = {"metrics_delay_s": 30.0}
MISSING = {"missing_families": ["vllm:request_prefill_time_seconds"]}

# name -> (scenario, documented exit codes, the candidate's simulator faults)
SCENARIOS: dict[str, tuple[Callable[[Campaign, Row], None], str, dict[str, Any]]] = {
    "baseline": (engine_fault, "0", {}),
    "sigkill_resume": (sigkill_resume, "-9 → 0", {}),
    "sigterm": (sigterm, "143 → 0", {}),
    "sigkill_lane_boot": (sigkill_lane_boot, "-9 → 0", {}),
    "sigkill_warmups": (sigkill_warmups, "-9 → 0", {}),
    "sigkill_between_cells": (sigkill_between_cells, "-9 → 0", {}),
    "sigkill_restoration": (sigkill_restoration, "-9 → 0", {}),
    "sigkill_restore_boot": (sigkill_restore_boot, "-9 → 0", {}),
    "sigkill_client": (sigkill_client, "3", {}),
    "sigkill_lane": (sigkill_lane, "3", {}),
    "sigkill_prefect_server": (sigkill_prefect_server, "0", {}),
    "prefect_server_lost": (prefect_server_lost, "2 → 0", {}),
    "metrics_500": (engine_fault, "3", METRICS_500),
    "metrics_hang": (engine_fault, "3", METRICS_HANG),
    "metrics_missing_family": (engine_fault, "3", MISSING),
    "metrics_garbage": (engine_fault, "3", METRICS_GARBAGE),
    "docker_oom": (docker_oom, "3", {}),
    "postgres_stopped": (postgres_stopped, "2 → 0", {}),
    "registry_down": (registry_down, "0", {}),
    "disk_full": (disk_full, "2 → 0", {}),
    "two_runs": (two_runs, "0 → 2", {}),
    "loaded_host": (loaded_host, "0", {}),
}


def run_scenario(root: Path, name: str) -> Row:
    scenario, expected, faults = SCENARIOS[name]
    cand = {"simulator": {"faults": faults}} if faults else {}
    c = new_campaign(root, f"faults-{name.replace('_', '-')}", **cand)
    row = Row(name, expected)
    start = time.monotonic()
    try:
        scenario(c, row)
        row.wall_s = time.monotonic() - start
        if not row.restored:
            measure(c, row)
    except Exception as error:  # a broken scenario is a row, with what it got to
        row.wall_s = time.monotonic() - start
        row.note = f"{type(error).__name__}: {error}"[:90]
        if c.dir.is_dir():
            measure(c, row)
    finally:
        teardown(c)
    return row


HEADER = (
    *("scenario", "planned", "journaled", "named", "lost", "restored", "audit"),
    *("not accepted", "exit", "expected", "tracebacks"),
)


def table(rows: list[Row]) -> str:
    cells = [
        [
            r.scenario,
            str(r.planned),
            str(r.journaled),
            str(r.named),
            str(r.lost),
            r.restored,
            r.audit,
            r.reasons,
            r.exit_text,
            r.expected,
            str(r.tracebacks),
            f"{r.wall_s:.0f}",
            "ok" if r.ok else "CHECK",
        ]
        for r in rows
    ]
    head = [*HEADER, "wall s", "row"]
    widths = [max(len(x) for x in column) for column in zip(head, *cells, strict=True)]
    lines = [
        " | ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)) for line in [head, *cells]
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    notes = [f"  {r.scenario}: {r.note}" for r in rows if r.note]
    notes += [f"  {r.scenario}: named as not measured: {w}" for r in rows for w in r.named_where]
    return "\n".join(lines + (["", "notes:", *notes] if notes else []))


def scenario_names(text: str) -> list[str]:
    """``--only``'s value: row names, comma-separated, each one of ``SCENARIOS``."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown row(s) {', '.join(unknown) or repr(text)}; --list shows the rows"
        )
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        type=scenario_names,
        default=[],
        metavar="ROW[,ROW]",
        help="run only these rows (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--keep", type=Path, help="run under this folder and keep it")
    args = parser.parse_args()
    if args.list:
        for name, (_, expected, _) in SCENARIOS.items():
            print(f"  {name:<24} expected exit {expected}")
        return
    names = [name for names in args.only for name in names] or list(SCENARIOS)
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="faults-")))
        rows = []
        for name in names:
            rows.append(run_scenario(root, name))
            print(table(rows[-1:]).splitlines()[2], flush=True)  # the row, as it comes
        print()
        print(table(rows))


if __name__ == "__main__":
    main()
