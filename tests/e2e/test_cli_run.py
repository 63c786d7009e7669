"""`faceoff run` refusing what it must refuse (exit status 2 and one clear paragraph), and
what a person at a terminal sees while a campaign runs and when it ends."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.conftest import REPO, faceoff_run
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix


def test_a_bad_matrix_fails_before_prefect_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[campaign]\nname = "x"\nseed = 1\n')
    done = subprocess.run(
        [sys.executable, "-m", "flows", "run", str(bad), "--workdir", str(tmp_path / "runs")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "arms" in done.stderr
    assert not (tmp_path / "runs" / ".prefect").exists()


@pytest.mark.prefect
def test_a_changed_matrix_under_the_same_campaign_name_is_refused(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    path = write_matrix(
        tmp_path, matrix("e2e-changed", [arm("inc", "incumbent"), arm("c", "candidate")])
    )
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        open_campaign(
            session, name="e2e-changed", matrix_id="d" * 64, evidence_dir=workdir / "e2e-changed",
            now=lambda: datetime.now(UTC),
        )  # fmt: skip
    log = tmp_path / "run.log"
    assert faceoff_run(path, workdir, harness_api, log=log).wait(120) == 2
    said = log.read_text()
    refused = "campaign 'e2e-changed' exists with matrix dddddddddddd"  # preflight: ledger
    assert any(
        line.startswith("error: preflight failed, nothing was touched: ledger") and refused in line
        for line in said.splitlines()
    ), said
    assert "rename the campaign to start anew" in said.lower()
    assert not (workdir / "e2e-changed" / "lanes").exists()  # nothing was touched


def run_in_terminal(command: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """Run ``command`` with a pseudo-terminal (120×40) as its stdin, stdout and stderr, as a
    person at a shell would; return its exit status and everything it wrote."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    with subprocess.Popen(
        command, cwd=REPO, env=env, stdin=follower, stdout=follower, stderr=follower
    ) as process:
        os.close(follower)
        chunks = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        status = process.wait(timeout=60)
    return status, b"".join(chunks).decode("utf-8", "replace")


def screen_lines(raw: str) -> list[str]:
    """The terminal output as lines, without colours and cursor moves."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    return [line.rstrip() for line in re.split(r"\r\n|\r|\n", plain)]


# Quiet host: it follows a whole campaign accepted cell by cell, and a busy host's answer in
# one read blocks a cell (decode undefined).
@pytest.mark.alone
@pytest.mark.prefect
def test_a_run_in_a_terminal_shows_progress_phase_eta_and_ends_in_a_short_summary(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    path = write_matrix(
        tmp_path, matrix("e2e-live", [arm("inc", "incumbent"), arm("cand", "candidate")])
    )
    env = {**os.environ, "PREFECT_API_URL": harness_api, "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "flows", "run", str(path), "--workdir", str(workdir)]

    status, raw = run_in_terminal(command, env, timeout_s=480)

    lines = screen_lines(raw)
    text = "\n".join(lines)
    assert status == 0, text[-3000:]
    # The view starts before Prefect: the first seconds say what is happening.
    seen = text[-6000:]  # what a failed assertion shows
    assert "phase starting: Prefect and the campaign's ledger rows" in text, seen
    assert re.search(r"e2e-live — [0-4]/4 cell runs", text), seen
    assert "e2e-live — 2/4 cell runs (2 accepted) — elapsed" in text, seen
    assert re.search(r"ETA ~\d+:\d\d \(≤ \d+:\d\d by the deadlines\)", text), seen
    assert re.search(r"phase cell: natural-600-c1 on inc, attempt 1: requests \d/4", text), seen
    assert "phase warmups: cand" in text or "phase lane boot: cand" in text, seen
    # restoration's lane boot and smokes take seconds; the bundle is written after them
    assert "phase restoration: inc (restore-001)" in text or "phase sealing" in text, seen
    start = max(i for i, line in enumerate(lines) if line.startswith("e2e-live: complete"))
    summary = [line for line in lines[start:] if line.strip()]
    assert len(summary) <= 25, "\n".join(summary)
    assert summary[1].startswith("headline figures, cell natural-600-c1")  # both arms ran it
    assert summary[2].split()[:2] == ["arm", "n"] and summary[3].startswith("inc ")
    assert summary[5].startswith("decision: pending human review")
    verdict = (
        r"natural-600-c2\s+accepted\s+accepted\s+(better|worse|mixed|no difference|descriptive) "
        r"\(better \d"
    )
    assert any(re.match(verdict, s) for s in summary), summary
    assert any(s.startswith("restoration: campaign e2e-live: incumbent restored") for s in summary)
    shown = "".join(summary)  # a long path may wrap at the terminal's width
    assert f"report.html: {workdir / 'e2e-live' / 'report.html'}" in shown
    assert f"RESULT.md: {workdir / 'e2e-live' / 'RESULT.md'}" in shown


def redirected(path: Path, workdir: Path, api_url: str, *options: str) -> tuple[int, str, str]:
    """`faceoff run` with its output to files, as cron, systemd or `tee` keeps it: no
    terminal, no COLUMNS."""
    env = {**os.environ, "PREFECT_API_URL": api_url}
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "flows", "run", str(path), "--workdir", str(workdir)]
    done = subprocess.run(
        [*command, *options], cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


LONG_ARMS = ("incumbent-fp8-kv-cache-r11", "candidate-nvfp4-mtp-speculation-r2")


@pytest.mark.prefect
def test_a_redirected_run_keeps_every_verdict_whole_on_one_line(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    """Was: redirected, the summary was cut to 80 columns and lost its verdicts."""
    inc, cand = LONG_ARMS
    data = matrix("e2e-redirected", [arm(inc, "incumbent"), arm(cand, "candidate")])
    status, out, err = redirected(write_matrix(tmp_path, data), workdir, harness_api)

    assert status in (0, 3), err[-3000:]
    assert "\x1b[" not in out  # plain: no colour, no cursor moves
    header = next(line for line in out.splitlines() if line.startswith("cell "))
    assert f"{cand} vs {inc}" in header and len(header) > 80
    verdict = (  # a 4-request cell's ratios only describe (below the calibrated n)
        r"(better|worse|mixed|no difference|descriptive) "
        r"\(better \d+, worse \d+, no difference \d+(, descriptive \d+)?\)"
    )
    for cell in ("natural-600-c1", "natural-600-c2"):
        line = next(line for line in out.splitlines() if line.startswith(cell))
        assert "…" not in line, line
        assert re.search(verdict + "; TTFT", line) or "not compared" in line, line
    assert f"RESULT.md: {workdir / 'e2e-redirected' / 'RESULT.md'}" in out.splitlines()


@pytest.mark.prefect
def test_log_format_json_writes_one_json_object_a_line_and_the_end_with_every_cell(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    data = matrix("e2e-json", [arm("inc", "incumbent"), arm("cand", "candidate")])
    path = write_matrix(tmp_path, data)
    status, out, err = redirected(path, workdir, harness_api, "--log-format", "json")

    assert status in (0, 3), err[-3000:]
    logged = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert logged, "no log line"
    assert all({"time", "level", "logger", "message"} <= set(line) for line in logged)
    assert any(line.get("flow_run_name") for line in logged)  # the flow's own lines
    (end,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert end["campaign"] == "e2e-json" and end["exit"] == status
    assert [c["cell"] for c in end["cells"]] == ["natural-600-c1", "natural-600-c2"]
    assert all(c["inc"] and "cand vs inc" in c for c in end["cells"])
    assert end["result_md"] == str(workdir / "e2e-json" / "RESULT.md")
