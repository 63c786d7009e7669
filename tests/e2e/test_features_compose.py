"""Features that compose: a pairwise-covering set of simulator campaigns.

Each feature has tests of its own; a night uses several at once. Every row below is one
campaign through `faceoff run` (its own workdir), and together the rows put every level of
every factor beside every level of every other at least once: the pilot (on, strict, off) ×
passes (sequential, replicated, single) × the cells beside a closed-loop one (open loop,
trace replay, dataset) × the A/A twin × a successor × a diagnostic run × a signing key.
Each campaign ends 0 or 3, sealed, and its bundle audits clean. A strict row's matrix has a
contract both arms overrun: its pilot blocks every cell run, and the campaign still closes.

The first row is the night that once ended in a traceback: the pilot on and a sequential
cell (three passes at most) beside a trace and a dataset cell.
"""

from __future__ import annotations

import itertools
import shutil
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from evidence.folder.layout import RESULT_FILE
from faceoff.formats.pilot import PILOT_DIR, PILOT_FILE, PilotRecord
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.conftest import REPO, faceoff, faceoff_run
from tests.e2e.matrices import arm, campaign, write_matrix

EXAMPLE_DATA = REPO / "matrix" / "examples" / "data"
CLOSED = "closed"
OVERRUN = {"faults": {"contract_overrun": True}}


@dataclass(frozen=True)
class Row:
    pilot: str  # on | strict | off
    passes: str  # sequential | replicated | single
    open_loop: bool = False
    trace: bool = False
    dataset: bool = False
    aa: bool = False
    successor: bool = False
    diagnose: bool = False
    signed: bool = False

    def __str__(self) -> str:
        flags = [f.name for f in fields(self)[2:] if getattr(self, f.name)]
        return "-".join([self.pilot, self.passes, *flags])


LEVELS: dict[str, tuple[Any, ...]] = {
    "pilot": ("on", "strict", "off"),
    "passes": ("sequential", "replicated", "single"),
}
# `faceoff run` refuses --aa with --diagnose: that pair is not asked for
FORBIDDEN = {(("aa", True), ("diagnose", True))}
ROWS = [
    Row("on", "sequential", trace=True, dataset=True, diagnose=True, signed=True),
    Row("on", "replicated", trace=True, aa=True, successor=True),
    Row("on", "single", open_loop=True, dataset=True, successor=True, diagnose=True, signed=True),
    Row("strict", "sequential", open_loop=True, dataset=True, aa=True),
    Row("strict", "replicated", True, True, True, successor=True, diagnose=True, signed=True),
    Row("strict", "single", successor=True),
    Row("off", "sequential", open_loop=True, trace=True, successor=True, diagnose=True),
    Row("off", "replicated", aa=True, signed=True),
    Row("off", "single", open_loop=True, trace=True, dataset=True, aa=True),
]


def levels(name: str) -> tuple[Any, ...]:
    return LEVELS.get(name, (False, True))


def test_the_rows_put_every_level_beside_every_other_level() -> None:
    names = [f.name for f in fields(Row)]
    wanted = {
        ((a, x), (b, y))
        for a, b in itertools.combinations(names, 2)
        for x in levels(a)
        for y in levels(b)
    } - FORBIDDEN
    seen = {
        ((a, x), (b, y))
        for row in ROWS
        for (a, x), (b, y) in itertools.combinations(zip(names, astuple(row), strict=True), 2)
    }
    assert wanted - seen == set()
    assert not seen & FORBIDDEN


def row_arms(row: Row) -> list[dict[str, Any]]:
    simulator = OVERRUN if row.pilot == "strict" else {}
    roles = (("inc", "incumbent"), ("cand", "candidate"))
    return [arm(name, role, warmups=0, simulator=simulator) for name, role in roles]


def row_matrix(
    row: Row, arms: list[dict[str, Any]], name: str, folder: Path, **campaign_fields: Any
) -> Path:
    data = campaign(name, arms)
    data["cells"] = [closed_cell(row), *extra_cells(row)]
    data["campaign"] |= campaign_fields
    if row.pilot != "off":
        data["campaign"]["pilot"] = True if row.pilot == "on" else "strict"
    if row.passes == "sequential":  # a criterion few requests cannot decide: every pass runs
        criterion = {"metric": "ttft_s", "non_inferiority": 0.0, "statistic": "p99"}
        data["rule"] = {"criteria": [criterion | {"cells": [CLOSED]}]}
    return write_matrix(folder, data)


def closed_cell(row: Row) -> dict[str, Any]:
    cell = {"id": CLOSED, "kind": "natural", "input_tokens": 300, "concurrency": 1}
    cell |= {"requests": 2, "deadline_s": 60.0, "sampling": {"max_tokens": 24}}
    if row.passes == "sequential":
        return cell | {"replicates": "auto", "max_passes": 3}
    return cell | {"replicates": 2} if row.passes == "replicated" else cell


def extra_cells(row: Row) -> list[dict[str, Any]]:
    small = {"requests": 3, "deadline_s": 60.0, "sampling": {"max_tokens": 24}}
    cells = []
    if row.open_loop:
        cells.append(small | {"id": "open", "kind": "natural", "input_tokens": 300,
                              "concurrency": 3, "arrival": "poisson", "rate": 8.0})  # fmt: skip
    if row.trace:
        trace = {"file": "data/azure-200.csv", "format": "azure", "time_scale": 50.0}
        cells.append(small | {"id": "trace", "kind": "trace", "concurrency": 3, "trace": trace})
    if row.dataset:
        dataset = {"file": "data/chat-50.jsonl", "format": "openai"}
        cells.append(small | {"id": "dataset", "kind": "dataset", "input_tokens": 1024,
                              "concurrency": 2, "dataset": dataset})  # fmt: skip
    if row.pilot == "strict":  # a contract both arms overrun: the strict pilot stops it all
        cells.append(small | {"id": "controlled", "kind": "controlled", "input_tokens": 300,
                              "concurrency": 1, "output_words": 6})  # fmt: skip
    return cells


def run_matrix(path: Path, workdir: Path, api_url: str, *options: str) -> None:
    log = path.with_suffix(".log")
    code = faceoff_run(path, workdir, api_url, log=log, options=options).wait(600)
    said = log.read_text()
    assert code in (0, 3), said[-4000:]
    assert "Traceback" not in said, said[-4000:]


def dispositions(workdir: Path, name: str) -> dict[tuple[str, str], tuple[str, str | None]]:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, name))
    return {(r.cell_id, r.arm): (r.disposition, r.reason_code) for r in runs}


@pytest.mark.prefect
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_the_features_compose_in_one_campaign(
    row: Row, harness_api: str, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(EXAMPLE_DATA, tmp_path / "data")
    where, trust = ["--workdir", str(workdir)], []
    if row.signed:
        made = faceoff(["keys", "init", "--out", str(tmp_path / "keys")], harness_api)
        assert made.returncode == 0, made.stderr
        monkeypatch.setenv("FACEOFF_SIGNING_KEY_FILE", str(tmp_path / "keys/faceoff-signing.key"))
        trust = ["--trust", str(tmp_path / "keys/faceoff-signing.pub")]
    arms, successor = row_arms(row), {}
    if row.successor:  # its source: the closed cell alone, on the same arms
        source = row_matrix(Row("off", "single"), arms, "compose-src", tmp_path)
        run_matrix(source, workdir, harness_api)
        successor = {"successor_of": "compose-src"}
    path = row_matrix(row, arms, "compose", tmp_path, **successor)
    run_matrix(path, workdir, harness_api, *(["--aa"] if row.aa else []))
    name = "compose-aa" if row.aa else "compose"

    found = dispositions(workdir, name)
    check_pilot(row, workdir / name, found)
    if row.diagnose:
        cell = CLOSED_ID[row.passes]
        done = faceoff(["run", "--diagnose", cell, str(path), *where], harness_api)
        assert done.returncode in (0, 3), done.stdout + done.stderr
        assert f"diagnostic of {cell}: one request per arm" in done.stdout
    audited = faceoff(["audit", name, *where, *trust], harness_api)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert (workdir / name / "SHA256SUMS").is_file()
    assert (workdir / name / "SEAL.dsse.json").is_file() == row.signed
    assert (workdir / name / RESULT_FILE).is_file()


CLOSED_ID = {"sequential": f"{CLOSED}-r1", "replicated": f"{CLOSED}-r1", "single": CLOSED}


def check_pilot(
    row: Row, bundle: Path, found: dict[tuple[str, str], tuple[str, str | None]]
) -> None:
    """The pilot ran once, each arm's lane once, before the first pass; strict stopped all."""
    if row.pilot == "off":
        assert not (bundle / PILOT_DIR).exists()
        return
    record = PilotRecord.read(bundle / PILOT_DIR / PILOT_FILE)
    assert sorted(lane.arm for lane in record.lanes) == ["cand", "inc"]
    assert all(lane.reason is None for lane in record.lanes), record.lanes
    blocked = {key for key, (_, reason) in found.items() if reason in ("pilot_failed",
                                                                        "stop_policy")}  # fmt: skip
    if row.pilot == "strict":
        assert record.stopped and blocked == set(found), found
    else:
        assert not record.stopped and not blocked, found
