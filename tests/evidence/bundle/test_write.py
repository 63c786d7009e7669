"""The bundle of a real simulated campaign: files, SHA256SUMS with coreutils, schema, secrets."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from evidence.attempt.goodput import goodput
from evidence.attempt.summary import summarize_attempt, summarize_journal
from evidence.audit.reverify import audit_bundle
from evidence.bundle.schema_export import SCHEMA_PATH, schema_text
from evidence.bundle.write import BundleIndex, reopen_bundle, write_bundle
from evidence.folder.layout import CampaignFolder
from faceoff.credentials import NOBODY
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Status
from faceoff.formats.attempt.request_plan import RequestPlan
from faceoff.formats.attempt.summary import RequestSummary
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.bundle.manifest import Manifest
from faceoff.formats.ticket_index import INDEX_FILE, TICKETS_DIR, TicketIndex
from matrix.slo import Slo
from tests.evidence.matrices import GENEROUS_SLO, PLANTED_TOKEN
from workload.journal import read_journal
from workload.metrics import ttft

EXPECTED = [
    "MANIFEST.json",
    "SHA256SUMS",
    "comparison.json",
    "RESULT.md",
    "report.html",
    "receipt.json",
    "matrix.frozen.json",
    "tickets/index.json",
]


def test_the_bundle_holds_every_artifact_of_the_contract(built: BundleIndex) -> None:
    for name in EXPECTED:
        assert (built.root / name).is_file(), name
    attempts = CampaignFolder(built.root).attempts()
    assert len(attempts) == 6
    ran = [a for a in attempts if (a.path / "journal.jsonl").exists()]
    assert len(ran) == 5  # the blocked candidate cell never ran
    assert all((a.path / "summary.json").is_file() for a in ran)
    assert list((built.root / "lanes").glob("*/campaign-001/boot.log"))


def test_the_comparisons_ticket_references_are_the_tickets_written(built: BundleIndex) -> None:
    index = TicketIndex.read(built.root / TICKETS_DIR / INDEX_FILE)
    refs = [(t.id, t.reason_code, t.cells, t.path) for t in built.comparison.tickets]
    written = [(e.id, e.reason_code, e.cells, e.path) for e in index.tickets if e.status == "open"]
    assert refs == written
    assert [code for _, code, _, _ in refs] == ["stop_policy", "contract_overrun"]
    assert all((built.root / path).is_file() for _, _, _, path in refs)


def test_sha256sum_c_verifies_every_file(built: BundleIndex) -> None:
    done = subprocess.run(
        ["sha256sum", "--strict", "-c", "SHA256SUMS"],
        cwd=built.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    listed = (built.root / "SHA256SUMS").read_text().splitlines()
    files = [p for p in built.root.rglob("*") if p.is_file() and p.name != "SHA256SUMS"]
    assert len(listed) == len(files) and done.stdout.count(": OK") == len(files)


def test_sha256sum_c_fails_on_a_changed_byte(built: BundleIndex, bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    path = root / "RESULT.md"
    path.write_text(path.read_text().replace("Decision", "Decisión", 1))
    done = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1 and "RESULT.md: FAILED" in done.stdout  # coreutils


def test_comparison_validates_against_the_shipped_json_schema(built: BundleIndex) -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "the shipped schema is stale; run `python -m evidence.bundle.schema_export`"
    )
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    document = json.loads((built.root / "comparison.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(document)
    broken = {**document, "coverage": {**document["coverage"], "accepted": "four"}}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(broken))
    assert errors and "four" in errors[0].message


def test_a_planted_secret_appears_nowhere_in_the_bundle(built: BundleIndex) -> None:
    # The campaign ran both lanes with HF_TOKEN resolved from the operator's environment.
    lane = json.loads(next(built.root.glob("lanes/exl3-r11/campaign-001/lane.json")).read_text())
    assert lane["env"]["HF_TOKEN"] == "***"
    leaked = [
        p for p in built.root.rglob("*") if p.is_file() and PLANTED_TOKEN.encode() in p.read_bytes()
    ]
    assert leaked == []
    fragment = PLANTED_TOKEN[4:20].encode()
    assert not [p for p in built.root.rglob("*") if p.is_file() and fragment in p.read_bytes()]


def test_the_manifest_names_tool_host_matrix_and_arms(built: BundleIndex) -> None:
    manifest = Manifest.read(built.root / "MANIFEST.json")
    comparison = Comparison.read(built.root / "comparison.json")
    assert manifest.matrix_id == comparison.matrix_id and manifest.campaign == "glm53-sim"
    assert manifest.host.memory.total_bytes > 0 and manifest.host.cpu.logical_cores
    assert manifest.host.kernel.release
    assert manifest.host.docker.status == "unavailable"  # the fixture gives no Docker client
    assert [a.name for a in manifest.arms] == ["exl3-r11", "nvfp4-r2"]
    assert manifest.arms[0].quantizations == ["exl3"] and manifest.arms[0].identity_verified
    assert manifest.arms[1].quantizations == ["modelopt_fp4"]


def test_each_summary_is_the_journal_recomputed(built: BundleIndex) -> None:
    attempt = next(
        a for a in CampaignFolder(built.root).attempts() if a.cell_id == "natural-8192-c1"
    )
    stored = RequestSummary.read(attempt.path / "summary.json")
    slo = Slo.model_validate(GENEROUS_SLO)
    assert stored == summarize_attempt(
        attempt.path, arm=attempt.arm, attempt=attempt.attempt, slo=slo
    )
    ttfts = sorted(
        v
        for o in read_journal(attempt.path / "journal.jsonl").outcomes
        if o.scored and (v := ttft(o).value) is not None
    )
    assert stored.metrics["ttft_s"].n == 4 == stored.planned_scored
    assert stored.metrics["ttft_s"].p50 == (ttfts[1] + ttfts[2]) / 2
    assert stored.metrics["ttft_s"].min == ttfts[0] and stored.metrics["ttft_s"].max == ttfts[-1]


def test_a_cell_with_an_slo_reports_goodput_in_its_summary_and_the_comparison(
    built: BundleIndex,
) -> None:
    slo = Slo.model_validate(GENEROUS_SLO)
    for attempt in CampaignFolder(built.root).attempts():
        if not (attempt.path / "summary.json").is_file():
            continue  # blocked before it ran
        stored = RequestSummary.read(attempt.path / "summary.json")
        if attempt.cell_id != "natural-8192-c1":
            assert stored.goodput is None  # no SLO declared for it
            continue
        outcomes = read_journal(attempt.path / "journal.jsonl").outcomes
        assert stored.goodput == goodput(outcomes, slo)
        assert stored.goodput.good == stored.goodput.scored == 4 and stored.goodput.within_slo
    cell = next(c for c in built.comparison.cells if c.id == "natural-8192-c1")
    assert all(a.goodput and a.goodput.requests_per_s for a in cell.arms)
    card = (built.root / "RESULT.md").read_text(encoding="utf-8")
    assert "goodput within SLO (TTFT ≤ 600000 ms, E2E ≤ 600000 ms for 100%)" in card


def test_a_scored_request_never_sent_does_not_stretch_the_cell_window(built: BundleIndex) -> None:
    attempts = CampaignFolder(built.root).attempts()
    attempt = next(a for a in attempts if a.cell_id == "natural-8192-c1")
    contents = read_journal(attempt.path / "journal.jsonl")
    plan = RequestPlan.read(attempt.path / "requests.json")
    last = max(o.end_ns for o in contents.outcomes if o.scored)
    unsent = contents.outcomes[-1].model_copy(
        update={"status": Status.CANCELLED, "send_ns": None, "end_ns": last + 10**10}
    )
    contents.outcomes[-1] = unsent  # as if it was cancelled before it was ever sent
    summary = summarize_journal(contents, plan, arm=attempt.arm, attempt=attempt.attempt, slo=None)
    sent_ends = [o.end_ns for o in contents.outcomes if o.scored and o.send_ns is not None]
    assert summary.last_end_ns == max(sent_ends) < unsent.end_ns


def test_rewriting_the_bundle_changes_nothing_but_the_manifest_time(
    built: BundleIndex,
    bundle_copy,
    host_facts,
    source_facts,  # type: ignore[no-untyped-def]
) -> None:
    root = bundle_copy()
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    write_bundle(root, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts)
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    changed = {str(k) for k in before if before[k] != after[k]}
    assert set(after) == set(before)
    assert changed <= {"MANIFEST.json", "SHA256SUMS"}, changed
    assert Path("report.html") not in {Path(c) for c in changed}  # plots are deterministic


def test_a_campaign_cut_short_still_gets_an_honest_bundle(
    campaign_dir: Path,
    tmp_path: Path,
    host_facts,
    source_facts,  # type: ignore[no-untyped-def]
) -> None:
    root = tmp_path / campaign_dir.name
    shutil.copytree(campaign_dir, root)
    (root / "receipt.json").unlink()  # killed before restoration finished
    shutil.rmtree(root / "cells/natural-31600-c2/nvfp4-r2")  # never started
    (root / "cells/natural-31600-c2/exl3-r11/attempt-1/verdict.json").unlink()  # not judged yet
    index = write_bundle(root, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts)
    coverage = index.comparison.coverage
    assert (coverage.pending, coverage.matched_pairs) == (2, 1)
    text = (root / "RESULT.md").read_text(encoding="utf-8")
    assert "Decision: pending human review; restoration not proven." in text
    assert "No verified restoration receipt: no receipt.json" in text
    assert "restoration_not_proven" in {c.code for c in index.comparison.caveats}
    assert [f.line for f in audit_bundle(root).findings] == [
        "receipt.json: missing: restoration is not proven"
    ]


def test_the_seal_covers_an_unscored_arms_kept_windows_and_never_a_scored_arms_second_copy(
    campaign_dir: Path,
    tmp_path: Path,
    host_facts,
    source_facts,  # type: ignore[no-untyped-def]
) -> None:
    root = tmp_path / campaign_dir.name
    shutil.copytree(campaign_dir, root)
    scored, unscored = (root / "fidelity" / "fid" / arm for arm in ("scored", "unscored"))
    for folder in (scored, unscored):
        (folder / "windows").mkdir(parents=True)
        (folder / "windows" / "window-00000.npz").write_bytes(b"one window's scores")
    (scored / "scores.json").write_text("{}")  # killed after writing it, before the removal
    write_bundle(root, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts)
    assert not (scored / "windows").exists()
    sums = (root / "SHA256SUMS").read_text(encoding="utf-8")
    assert "  fidelity/fid/unscored/windows/window-00000.npz\n" in sums
    assert "fidelity/fid/scored/windows" not in sums


def test_a_rebuild_refuses_a_bundle_that_no_longer_verifies(
    bundle_copy,
    host_facts,
    source_facts,  # type: ignore[no-untyped-def]
) -> None:
    root = bundle_copy()
    name = "lanes/exl3-r11/campaign-001/boot.log"
    boot = root / name
    boot.write_text(boot.read_text().replace("quantization=exl3", "quantization=fp8"))
    sums = (root / "SHA256SUMS").read_bytes()
    with pytest.raises(FaceoffError, match=f"no longer matches its SHA256SUMS.*{name}"):
        write_bundle(root, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts)
    assert (root / "SHA256SUMS").read_bytes() == sums
    assert any(f.line.startswith(f"{name}: sha256 is") for f in audit_bundle(root).findings)


def test_a_resumed_run_reopens_only_an_intact_bundle(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    intact, edited = bundle_copy(), bundle_copy("edited")
    reopen_bundle(intact, NOBODY, sealed=True)
    assert not (intact / "SHA256SUMS").exists()
    journal = edited / "cells/natural-8192-c1/exl3-r11/attempt-1/journal.jsonl"
    journal.write_text(journal.read_text() + "\n")
    with pytest.raises(FaceoffError, match=r"attempt-1/journal\.jsonl"):
        reopen_bundle(edited, NOBODY, sealed=True)
    assert (edited / "SHA256SUMS").exists()  # refused: the seal stays
