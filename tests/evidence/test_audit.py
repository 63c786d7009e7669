"""faceoff audit: a clean bundle passes; each tamper is named by file and field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from collectors.cadence import cell_ticks
from collectors.samples import EngineSample
from evidence.audit import audit_bundle
from evidence.bundle import BundleIndex
from evidence.layout import CampaignFolder
from evidence.sums import write_sums
from guards.record import CellRecord
from lanes.receipt import Receipt
from tests.foundation.cli import faceoff

CELL = "cells/natural-8192-c1/exl3-r11/attempt-1"


def edit_jsonl(path: Path, line: int, change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line])
    change(record)
    lines[line] = json.dumps(record, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def lines_of(root: Path) -> list[str]:
    return [f.line for f in audit_bundle(root).findings]


def test_a_clean_bundle_passes_audit_with_exit_code_zero(built: BundleIndex) -> None:
    done = faceoff("audit", str(built.root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": OK (" in done.stdout
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
    assert done.returncode == 1 and f"{CELL}/summary.json: metrics.e2e_s" in done.stdout


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
    assert any(f.startswith("RESULT.md: differs from the card") for f in found)
