"""`faceoff run --diagnose CELL MATRIX` through the command line, on simulator lanes.

A campaign whose candidate ignores the output contract fails its controlled cell; the
ticket names the exact diagnose command, which is then run as written (the matrix path
put in): one request of the cell on each arm's lane in turn, never scored, with the
/metrics scrapes around it and the lane's log tail, the incumbent restored with a new
receipt, the bundle sealed again with the diagnostics hashed, bound and audited.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evidence.audit.checklist import checklist
from evidence.audit.reverify import DIAGNOSTICS, audit_bundle
from evidence.folder.layout import CampaignFolder
from evidence.folder.sums import read_sums
from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import RequestPlan
from faceoff.formats.diagnostic import Diagnostic
from faceoff.formats.receipt import verify_receipt
from tests.e2e.conftest import REPO, faceoff, faceoff_run
from tests.e2e.matrices import arm, campaign, write_matrix
from tickets.store import open_tickets
from workload.journal import read_journal

pytestmark = pytest.mark.prefect

CELL = "controlled-600-c1"
FILES = ("requests.json", "journal.jsonl", "client.log", "engine.jsonl", "scrape-first.txt",
         "scrape-last.txt", "boot-log-tail.txt", "diagnostic.json")  # fmt: skip


def overrun_matrix(folder: Path) -> Path:
    """The candidate ignores "exactly N words" and runs to max_tokens (48)."""
    overrun = {"faults": {"contract_overrun": True}}
    data = campaign(
        "e2e-diag", [arm("inc", "incumbent"), arm("cand", "candidate", simulator=overrun)]
    )
    controlled = {"id": CELL, "kind": "controlled", "input_tokens": 600, "concurrency": 1}
    controlled |= {"requests": 2, "output_words": 8, "deadline_s": 60.0}
    data["cells"] = [controlled | {"sampling": {"max_tokens": 48}}]
    return write_matrix(folder, data)


def test_the_tickets_diagnose_command_runs_one_paired_request_per_arm_into_the_bundle(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    matrix = overrun_matrix(tmp_path)
    assert faceoff_run(matrix, workdir, harness_api, log=tmp_path / "run.log").wait(600) == 3
    bundle = workdir / "e2e-diag"
    (ticket,) = open_tickets(workdir)
    assert ticket.reason_code == "contract_overrun"
    command = re.search(r"`(faceoff run --diagnose \S+ MATRIX)`", ticket.suggested_next_step)
    assert command is not None, ticket.suggested_next_step
    assert command[1] == f"faceoff run --diagnose {CELL} MATRIX"

    argv = shlex.split(command[1].replace("MATRIX", str(matrix)))[1:]
    done = faceoff([*argv, "--workdir", str(workdir)], harness_api)

    said = done.stdout
    assert done.returncode == 3, said + done.stderr  # the candidate's request ran to length
    assert f"diagnostic of {CELL}: one request per arm" in said
    assert re.search(r"^inc\s+1\s+ok\s", said, re.M), said
    assert re.search(r"^cand\s+1\s+length_limit\s+\d+\s+48\s", said, re.M), said
    assert re.search(r"^cand .*\(\d+\.\d\d×\)", said, re.M), said  # times against inc's
    assert "prompt-token vectors: equal on every arm" in said
    assert "restoration: campaign e2e-diag: incumbent restored" in said

    found = {a: check_run(bundle / "diagnostics" / CELL / a / "run-1") for a in ("inc", "cand")}
    assert found["inc"].output_tokens is not None and found["inc"].output_tokens < 48
    assert found["cand"].output_tokens == 48
    plans = [RequestPlan.read(bundle / "diagnostics" / CELL / a / "run-1/requests.json")
             for a in ("inc", "cand")]  # fmt: skip
    assert plans[0].requests[0].messages == plans[1].requests[0].messages  # retokenized

    check_sealed(bundle)
    # No cell ran again: the campaign's attempts and dispositions are as they were.
    assert sorted(p.name for p in (bundle / "cells" / CELL).glob("*/attempt-*")) == [
        "attempt-1",
        "attempt-1",
    ]


def check_run(folder: Path) -> Diagnostic:
    """The run folder's files, its one diagnostic request, and its record against them."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    (line,) = read_journal(folder / "journal.jsonl").outcomes
    assert line.phase is Phase.DIAGNOSTIC and line.chunk_offsets_us
    assert line.usage is not None
    diagnostic = Diagnostic.read(folder / "diagnostic.json")
    assert diagnostic.status == line.status.value
    assert diagnostic.chunk_offsets_ms == [us / 1000 for us in line.chunk_offsets_us]
    assert diagnostic.scrapes == ["ok", "ok"]
    # The engine counted this request, and only it, between the two scrapes.
    assert diagnostic.engine_deltas["prompt_tokens"] == line.usage.prompt_tokens
    assert diagnostic.engine_deltas["generation_tokens"] == line.usage.completion_tokens
    assert diagnostic.seen.lane_run.startswith(f"lanes/{folder.parent.name}/campaign-")
    assert diagnostic.seen.lane_usable and diagnostic.seen.setup_error is None
    assert (folder / "boot-log-tail.txt").read_text().strip()
    return diagnostic


def check_sealed(bundle: Path) -> None:
    """Hashed in SHA256SUMS, bound by the new receipt, recomputed by the audit; an edit of a
    diagnostic's figure is found by the diagnostics check itself."""
    listed = read_sums(CampaignFolder.at(bundle))
    runs = [f"diagnostics/{CELL}/{a}/run-1" for a in ("inc", "cand")]
    assert {f"{run}/{name}" for run in runs for name in FILES} <= set(listed)
    sums = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=bundle, check=False)
    assert sums.returncode == 0
    receipt = verify_receipt(bundle / "receipt.json")
    assert f"{runs[0]}/journal.jsonl" in receipt.bound_files
    assert (bundle / "receipt.superseded-1.json").is_file()  # the campaign run's own

    report = audit_bundle(bundle)
    assert report.ok, [f.line for f in report.findings]
    (check,) = [c for c in checklist(report).checks if c.check == DIAGNOSTICS]
    assert check.count == 2 and check.result == "ok"

    path = bundle / runs[1] / "diagnostic.json"
    edited = json.loads(path.read_text())
    edited["ttft_s"] = (edited["ttft_s"] or 0) / 2 + 0.001
    path.write_text(json.dumps(edited))
    findings = [f for f in audit_bundle(bundle).findings if f.check == DIAGNOSTICS]
    assert [(f.file, f.field) for f in findings] == [(f"{runs[1]}/diagnostic.json", "ttft_s")]


def test_an_unknown_cell_is_one_line_naming_it_and_the_cells_exit_2(tmp_path: Path) -> None:
    matrix = overrun_matrix(tmp_path)
    workdir = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "flows", "run", "--diagnose", "natural-1-c1", str(matrix),
         "--workdir", str(workdir)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: --diagnose: no cell 'natural-1-c1' in the matrix of campaign e2e-diag; its "
        f"cells: {CELL}. Pass one of those ids."
    ]
    assert "Traceback" not in done.stderr and not workdir.exists()  # nothing was started
