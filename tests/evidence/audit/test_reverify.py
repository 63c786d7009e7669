"""faceoff audit: a clean bundle passes; each tamper is named by file and field."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from collectors.cadence import cell_ticks
from evidence.audit.reverify import audit_bundle
from evidence.bundle.write import BundleIndex
from evidence.folder.layout import CampaignFolder
from evidence.folder.sums import write_sums
from faceoff.exits import Exit
from faceoff.formats.attempt.cell_record import CellRecord
from faceoff.formats.attempt.collector_samples import EngineSample
from faceoff.formats.receipt import Receipt
from tests.foundation.cli import faceoff
from tests.foundation.output_schemas import shaped

CELL = "cells/natural-8192-c1/exl3-r11/attempt-1"


def edit_jsonl(path: Path, line: int, change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line])
    change(record)
    lines[line] = json.dumps(record, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def lines_of(root: Path) -> list[str]:
    return [f.line for f in audit_bundle(root).findings]


def test_a_clean_bundle_passes_audit_as_a_checklist_with_exit_code_zero(
    built: BundleIndex,
) -> None:
    done = faceoff("audit", str(built.root))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == f"{built.root}: OK (unsigned: integrity only)"
    assert "  [ok  ] files match SHA256SUMS (" in lines[0]
    assert "  [ok  ] guard verdicts recomputed (5)" in lines
    assert "  [ok  ] comparison.json, RESULT.md, report.html rebuilt and compared (3)" in lines
    assert "  [ok  ] protected operator files declared and unchanged (1)" in lines
    assert any(line.startswith("  [skip] signatures") for line in lines)
    by_name = faceoff("audit", built.root.name, "--workdir", str(built.root.parent))
    assert by_name.returncode == 0 and by_name.stdout == done.stdout
    shown = shaped("audit", faceoff("audit", str(built.root), "--json").stdout)
    assert (shown["schema_version"], shown["ok"]) == (1, True)
    checks = {c["id"]: c for c in shown["checks"]}
    assert (checks["verdicts"]["count"], checks["verdicts"]["result"]) == (5, "ok")
    assert checks["signatures"]["result"] == "not checked"
    assert checks["protected_files"] == {
        "id": "protected_files", "check": "protected operator files declared and unchanged",
        "count": 1, "result": "ok", "note": "", "findings": [],
    }  # fmt: skip
    report = audit_bundle(built.root)
    assert report.ok and "receipt.json" in report.checked
    assert sum(1 for c in report.checked if c.endswith("verdict.json")) == 5


def test_a_changed_journal_line_is_named_by_file_and_field(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()

    def later(record: dict) -> None:  # type: ignore[type-arg]
        record["last_token_ns"] += 250_000_000

    edit_jsonl(root / CELL / "journal.jsonl", 0, later)
    found = lines_of(root)
    assert f"{CELL}/journal.jsonl: sha256 is" in found[0]
    assert any(f.startswith(f"{CELL}/summary.json: metrics.e2e_s.") for f in found)
    assert any(f.startswith(f"{CELL}/verdict.json: inputs.journal.jsonl") for f in found)
    done = faceoff("audit", str(root))
    assert done.returncode == Exit.FINDINGS and f"{CELL}/summary.json: metrics.e2e_s" in done.stdout
    assert "  [FAIL] request summaries recomputed from journals (" in done.stdout
    shown = shaped("audit", faceoff("audit", str(root), "--json").stdout)
    failed = {c["id"]: c["findings"] for c in shown["checks"] if c["result"] == "failed"}
    assert {"hashes", "summaries", "verdicts"} <= set(failed)
    assert failed["summaries"][0]["file"] == f"{CELL}/summary.json"


def test_a_changed_sample_is_named_by_file_and_field(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    window = CellRecord.read(root / CELL / "cell.json").window
    assert window is not None
    engine = root / CELL / "engine.jsonl"
    samples = [EngineSample.model_validate_json(line) for line in engine.read_text().splitlines()]
    # A sample the telemetry's maxima are taken over: one of the window's ticks, read ok
    # (a tick due before the window but taken late inside it is not one of them).
    ticks = cell_ticks(samples, window, samples[0].period_ns, late_after_ns=0)
    inside = samples.index(next(s for s in ticks.cell_samples() if s.ok))

    def busier(record: dict) -> None:  # type: ignore[type-arg]
        record["metrics"]["gauges"]["num_requests_running"] = 99.0

    edit_jsonl(engine, inside, busier)
    found = lines_of(root)
    assert any(f.startswith(f"{CELL}/engine.jsonl: sha256 is") for f in found)
    assert any(f.startswith(f"{CELL}/telemetry.json: engine.max_running: file says") for f in found)
    assert any(f.startswith(f"{CELL}/verdict.json: inputs.engine.jsonl") for f in found)


def test_a_changed_receipt_field_breaks_its_own_hash(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    receipt = json.loads((root / "receipt.json").read_text())
    receipt["protected_files"][0]["after"]["sha256"] = "0" * 64
    (root / "receipt.json").write_text(json.dumps(receipt, indent=2))
    found = lines_of(root)
    assert any(f.startswith("receipt.json: sha256 is") for f in found)
    assert any(
        f.startswith("receipt.json: receipt_sha256: receipt content hashes to") for f in found
    )
    assert any(f.startswith("comparison.json: restoration.verified") for f in found)


def test_tampering_is_found_even_when_sha256sums_is_rewritten_to_match(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()

    def fewer_tokens(record: dict) -> None:  # type: ignore[type-arg]
        record["usage"]["completion_tokens"] -= 10

    edit_jsonl(root / CELL / "journal.jsonl", 1, fewer_tokens)
    write_sums(CampaignFolder(root))
    found = lines_of(root)
    assert not any("SHA256SUMS says" in f for f in found)
    assert any(f.startswith(f"{CELL}/summary.json: completion_tokens.") for f in found)
    assert any(f.startswith(f"{CELL}/verdict.json: ") for f in found)


def test_a_reforged_self_consistent_receipt_is_refused_by_its_bindings(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    receipt = Receipt.read(root / "receipt.json")
    forged = receipt.model_copy(update={"pid": 1, "receipt_sha256": ""}).judged().sealed()
    forged.write(root / "receipt.json", replace=True)
    write_sums(CampaignFolder(root))
    found = lines_of(root)
    assert any(f.startswith("receipt.json: pid: says 1, lanes/exl3-r11/restore-001") for f in found)


def test_an_added_file_is_reported_as_not_listed(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    (root / "cells" / "extra.txt").write_text("not evidence")
    assert "cells/extra.txt: present but not listed in SHA256SUMS" in lines_of(root)


def test_an_edited_verdict_or_card_is_found_by_recomputation(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    verdict = root / "cells/controlled-8192-c1/exl3-r11/attempt-1/verdict.json"
    document = json.loads(verdict.read_text())
    document["disposition"], document["reason"] = "accepted", "accepted"
    verdict.write_text(json.dumps(document, indent=2))
    card = root / "RESULT.md"
    card.write_text(card.read_text().replace("Decision: pending human review", "Decision: promote"))
    write_sums(CampaignFolder(root))
    found = lines_of(root)
    prefix = "cells/controlled-8192-c1/exl3-r11/attempt-1/verdict.json: disposition: file says"
    assert any(
        f.startswith(f"{prefix} 'accepted', recomputed from native files: 'failed'") for f in found
    )
    assert any(f.startswith("RESULT.md: differs from what this faceoff renders") for f in found)


def drop_sums_line(root: Path, name: str) -> None:
    """Remove ``name``'s line from SHA256SUMS, as someone covering a deletion would."""
    sums = root / "SHA256SUMS"
    lines = sums.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if line.rstrip("\n").split("  ", 1)[1] != name]
    assert len(kept) == len(lines) - 1, name
    sums.write_text("".join(kept), encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("report.html", "missing; it can be rebuilt from comparison.json"),
        ("RESULT.md", "missing; it can be rebuilt from comparison.json"),
        ("comparison.json", "missing; it can be recomputed"),
        ("MANIFEST.json", "missing; the bundle does not say who wrote it"),
        ("tickets/index.json", "missing; the failed and blocked cell runs have no tickets"),
        ("lanes/exl3-r11/campaign-001/boot.log", "missing; receipt.json bound it"),
        ("lanes/nvfp4-r2/campaign-001/lane.json", "missing; receipt.json bound it"),
        ("lanes/exl3-r11/restore-001/boot.log", "missing; receipt.json bound it"),
        (f"{CELL}/scrape-last.txt", "missing; receipt.json bound it"),
        ("protected.before.json", "missing; receipt.json bound it"),
    ],
)
def test_a_required_file_deleted_with_its_sums_line_is_found(
    bundle_copy,  # type: ignore[no-untyped-def]
    name: str,
    problem: str,
) -> None:
    root = bundle_copy()
    (root / name).unlink()
    drop_sums_line(root, name)
    found = lines_of(root)
    assert any(f.startswith(f"{name}: {problem}") for f in found), found


def test_native_files_edited_with_their_sums_lines_are_found_by_the_receipt(
    bundle_copy,  # type: ignore[no-untyped-def]
) -> None:
    root = bundle_copy()
    lane = root / "lanes/nvfp4-r2/campaign-001/lane.json"
    record = json.loads(lane.read_text())
    record["engine_args"] = ["--max-num-seqs", "64"]
    lane.write_text(json.dumps(record, indent=2))
    boot = root / "lanes/nvfp4-r2/campaign-001/boot.log"
    boot.write_text(boot.read_text().replace("quantization=modelopt_fp4", "quantization=fp8"))
    (root / CELL / "client.log").write_text("a client log added later")
    (root / "cells/notes.txt").write_text("not a cell")
    write_sums(CampaignFolder(root))
    found = lines_of(root)
    assert not any("SHA256SUMS says" in f or "not listed" in f for f in found)
    for name in ("lane.json", "boot.log"):
        path = f"lanes/nvfp4-r2/campaign-001/{name}"
        assert any(f.startswith(f"{path}: sha256 is") and "receipt.json bound" in f for f in found)
    assert f"{CELL}/client.log: not bound by receipt.json: added after restoration" in found
    assert "cells/notes.txt: not bound by receipt.json: added after restoration" in found


def test_an_edited_report_manifest_or_ticket_index_is_found_by_rebuilding(
    bundle_copy,  # type: ignore[no-untyped-def]
) -> None:
    root = bundle_copy()
    report = root / "report.html"
    report.write_text(report.read_text().replace("closed partial", "complete"))
    manifest = json.loads((root / "MANIFEST.json").read_text())
    manifest["arms"][1]["quantizations"] = ["fp8"]
    (root / "MANIFEST.json").write_text(json.dumps(manifest, indent=2))
    index = json.loads((root / "tickets/index.json").read_text())
    index["tickets"] = []
    (root / "tickets/index.json").write_text(json.dumps(index, indent=2))
    write_sums(CampaignFolder(root))
    found = lines_of(root)
    assert any(f.startswith("report.html: differs from what this faceoff renders") for f in found)
    arm = manifest["arms"][1]["name"]  # an element of a list is named by its id, not its index
    assert any(f.startswith(f"MANIFEST.json: arms[{arm}].quantizations") for f in found), found
    assert any(f.startswith("tickets/index.json: tickets") for f in found), found


def test_a_missing_sha256sums_is_a_finding(bundle_copy) -> None:  # type: ignore[no-untyped-def]
    root = bundle_copy()
    (root / "SHA256SUMS").unlink()
    assert lines_of(root)[0].startswith("SHA256SUMS: SHA256SUMS is missing")
    done = faceoff("audit", str(root))
    assert done.returncode == Exit.FINDINGS


def test_figures_are_checked_by_their_data_hash_and_drawn_again_only_with_redraw(
    bundle_copy,  # type: ignore[no-untyped-def]
) -> None:
    root = bundle_copy()
    page = root / "report.html"
    text = page.read_text()
    hashes = re.findall(r'data-figure-sha256="([0-9a-f]{64})"', text)
    assert len(hashes) >= 1 + 2 + 2 * 3 and text.count("<svg") == len(hashes)
    # a drawing edited together with its SHA256SUMS line: the default audit draws nothing
    # (its note says so); --redraw draws every figure again and finds it
    page.write_text(text.replace("<svg", '<svg data-edited="1"', 1))
    write_sums(CampaignFolder(root))
    quick = audit_bundle(root)
    assert quick.ok and any("--redraw" in note for note in quick.notes)
    redrawn = faceoff("audit", str(root), "--redraw")
    assert redrawn.returncode == Exit.FINDINGS
    assert "report.html: differs from what this faceoff renders" in redrawn.stdout
    # a figure that claims other data than the native files give is found without drawing
    page.write_text(text.replace(hashes[-1], "0" * 64))
    write_sums(CampaignFolder(root))
    found = lines_of(root)
    assert any(f.startswith("report.html: differs from what this faceoff renders") for f in found)
    # and so is text added inside a drawing, outside the svg element
    page.write_text(text.replace("</svg>", "</svg></div><p>p95 1.0 s</p><div>", 1))
    write_sums(CampaignFolder(root))
    assert any(f.startswith("report.html: differs") for f in lines_of(root))
