"""The client process (`python -m workload.cell_client`): exit statuses, signals, SIGKILL."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

import pytest
from prometheus_client.parser import text_string_to_metric_families

from faceoff.formats.attempt.journal import Status
from faceoff.formats.attempt.request_plan import RequestPlan
from simulator.groundtruth import read_ground_truth
from tests.workload.conftest import StartSim, cell, http_plan
from workload.cell_client import client_command
from workload.journal import read_journal

REPO = Path(__file__).resolve().parents[2]


def client(plan: Path, url: str, journal: Path, *extra: str) -> subprocess.Popen[str]:
    command = [*client_command(plan, url, journal, arm="inc", attempt=2), *extra]
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def read_progress(stream: IO[str], count: int) -> list[dict[str, object]]:
    lines: list[dict[str, object]] = []
    while len(lines) < count:
        line = stream.readline()
        assert line, "client exited before journaling enough requests"
        lines.append(json.loads(line)["journaled"])
    return lines


def write_plan(url: str, path: Path, **fields: object) -> RequestPlan:
    plan = asyncio.run(http_plan(url, cell(**fields)))  # type: ignore[arg-type]
    plan.write(path)
    return plan


def start_streaming(
    url: str, folder: Path, *extra: str, requests: int, concurrency: int, tokens: int
) -> subprocess.Popen[str]:
    """The client on a plan of ``requests`` answers of exactly ``tokens`` tokens each."""
    sampling = {"max_tokens": tokens, "ignore_eos": True}
    plan = folder / "requests.json"
    write_plan(url, plan, requests=requests, concurrency=concurrency, sampling=sampling)
    return client(plan, url, folder / "journal.jsonl", *extra)


def wait_until_streaming(url: str, requests: int, tokens: int) -> None:
    """Until the lane runs ``requests`` requests and has generated ``tokens`` tokens in all."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url + "/metrics") as response:
            families = text_string_to_metric_families(response.read().decode())
            samples = {s.name: s.value for family in families for s in family.samples}
        running = samples["vllm:num_requests_running"]
        if running >= requests and samples["vllm:generation_tokens_total"] >= tokens:
            return
        time.sleep(0.02)
    raise AssertionError(f"the lane was not streaming {requests} requests within 30 s")


def test_a_run_journals_every_request_and_prints_a_summary(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    plan = write_plan(sim.url, tmp_path / "requests.json", warmups=1)
    proc = client(tmp_path / "requests.json", sim.url, tmp_path / "journal.jsonl", "--progress")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len([x for x in lines if "journaled" in x]) == 5
    assert lines[-1]["summary"]["statuses"] == {"ok": 5}
    outcomes = read_journal(tmp_path / "journal.jsonl").outcomes
    assert {(o.arm, o.attempt) for o in outcomes} == {("inc", 2)}
    assert {o.plan_sha256 for o in outcomes} == {plan.sha256()}
    assert len({(o.wall_anchor_utc, o.mono_anchor_ns, o.client_run) for o in outcomes}) == 1


def test_sigkill_mid_cell_keeps_exactly_the_finished_requests(
    start_sim: StartSim, tmp_path: Path
) -> None:
    truth = tmp_path / "truth.jsonl"
    sim = start_sim(time_scale=1.0, args=["--ground-truth", str(truth)])
    # C1, 200-token answers at 200 tok/s: a request ends every ~1 s
    proc = start_streaming(sim.url, tmp_path, "--progress", requests=6, concurrency=1, tokens=200)
    assert proc.stdout is not None
    read_progress(proc.stdout, 3)
    time.sleep(0.4)  # well inside request 4 (it streams for ~1 s)
    killed_ns = time.perf_counter_ns()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    contents = read_journal(tmp_path / "journal.jsonl")
    assert contents.torn_tail is None and not contents.bad_lines and not contents.invalid
    assert [o.index for o in contents.outcomes] == [0, 1, 2]
    assert all(o.status is Status.OK for o in contents.outcomes)
    time.sleep(0.5)  # the server notices the dropped connection and journals it
    done_before_kill = [
        r
        for r in read_ground_truth(truth).values()
        if r["chunks"][-1][0] == "done" and r["chunks"][-1][1] < killed_ns
    ]
    assert len(done_before_kill) == 3


def test_sigkill_under_concurrency_leaves_only_complete_parsable_lines(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(time_scale=1.0)
    proc = start_streaming(sim.url, tmp_path, "--progress", requests=64, concurrency=16, tokens=20)
    assert proc.stdout is not None
    seen = read_progress(proc.stdout, 20)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    contents = read_journal(tmp_path / "journal.jsonl")
    assert not contents.bad_lines and not contents.invalid
    journaled = [(o.phase.value, o.index) for o in contents.outcomes]
    # every line the client reported as fsync'd is there, complete, exactly once
    assert {(str(s["phase"]), s["index"]) for s in seen} <= set(journaled)
    assert len(set(journaled)) == len(journaled) < 64


def test_sigterm_cancels_in_flight_requests_and_journals_all_of_them(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(time_scale=1.0)
    proc = start_streaming(sim.url, tmp_path, requests=6, concurrency=2, tokens=300)
    wait_until_streaming(sim.url, requests=2, tokens=60)  # ~0.15 s into two 1.5 s requests
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    summary = json.loads(out.splitlines()[-1])["summary"]
    assert summary["stopped_by"] == "SIGTERM received"
    outcomes = read_journal(tmp_path / "journal.jsonl").outcomes
    assert sorted(o.index for o in outcomes) == list(range(6))
    cut = [o for o in outcomes if o.error == "cancelled in flight: SIGTERM received"]
    assert len(cut) == 2 and all(0 < len(o.chunk_offsets_us) < 300 for o in cut)
    assert {o.status for o in outcomes} == {Status.CANCELLED}


def test_stop_signals_that_keep_coming_never_cost_a_journal_line(
    start_sim: StartSim, tmp_path: Path
) -> None:
    """A parent that dies sends PR_SET_PDEATHSIG once per thread of it that exits: a
    SIGKILLed orchestrator sends a SIGTERM, then more while its threads go (measured: a
    second 26 ms after the first on a loaded host). One that lands while the client
    closes its journal, after its event loop gave the signal back its default action,
    killed it with lines still queued."""
    sim = start_sim(time_scale=1.0)
    proc = start_streaming(sim.url, tmp_path, "--progress", requests=6, concurrency=1, tokens=60)
    assert proc.stdout is not None
    read_progress(proc.stdout, 1)
    sent = 0
    while proc.poll() is None:  # until it exits: before, during and after its shutdown
        proc.send_signal(signal.SIGTERM)
        sent += 1
        time.sleep(0.001)
    out = proc.stdout.read()
    assert proc.returncode == 128 + signal.SIGTERM, f"{sent} SIGTERMs, exit {proc.returncode}"
    assert json.loads(out.splitlines()[-1])["summary"]["stopped_by"] == "SIGTERM received"
    contents = read_journal(tmp_path / "journal.jsonl")
    assert contents.intact and sorted(o.index for o in contents.outcomes) == list(range(6))


def test_cell_deadline_exits_3_and_bad_input_exits_2(start_sim: StartSim, tmp_path: Path) -> None:
    sim = start_sim(time_scale=1.0)
    proc = start_streaming(
        sim.url, tmp_path, "--cell-deadline-s", "0.3", requests=2, concurrency=1, tokens=300
    )
    proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert len(read_journal(tmp_path / "journal.jsonl").outcomes) == 2
    (tmp_path / "broken.json").write_text('{"schema_version": 1}')
    proc = client(tmp_path / "broken.json", sim.url, tmp_path / "other.jsonl")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "not a valid RequestPlan" in err
    assert not (tmp_path / "other.jsonl").exists()


@pytest.mark.parametrize("argv", [["--plan"], []])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "workload.cell_client", *argv], cwd=REPO, capture_output=True
    )
    assert proc.returncode == 2


def test_the_client_reports_the_cpu_wait_of_its_run_not_of_its_start_up() -> None:
    """The host-stall guard divides this wait by the cell window; waits spent importing
    before the first request (seconds on a loaded host) must not count."""
    from workload.cell_client import process_times, runqueue_wait_s

    before, cpu_before = runqueue_wait_s(), time.process_time()
    assert before is not None and before >= 0
    times = process_times(before, cpu_before)
    during = times["runqueue_wait_s"]
    after = runqueue_wait_s()
    assert during is not None and after is not None
    assert 0 <= during <= after - before
    assert times["run_cpu_s"] is not None and times["cpu_s"] is not None
    assert 0 <= times["run_cpu_s"] <= times["cpu_s"]
    assert process_times(None, cpu_before)["runqueue_wait_s"] is None
