"""The benchmarks' synthetic campaign generator writes a folder that bundles and audits clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.synthetic_campaign import Shape, generate
from evidence.audit.reverify import audit_bundle
from evidence.bundle.write import write_bundle
from faceoff.formats.host_facts import HostFacts, SourceFacts
from workload.journal import read_journal

REPO = Path(__file__).resolve().parents[2]


def test_a_tiny_synthetic_campaign_is_accepted_bundled_and_audited_clean(
    tmp_path: Path, host_facts: HostFacts, source_facts: SourceFacts
) -> None:
    shape = Shape(requests=40, cells=2, concurrency=4, input_tokens=192, output_tokens=16)
    folder = generate(tmp_path, shape)
    built = write_bundle(
        folder, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts
    )
    runs = [arm for cell in built.comparison.cells for arm in cell.arms]
    assert [r.disposition for r in runs] == ["accepted"] * 4
    assert all(cell.ratios for cell in built.comparison.cells)
    journals = sorted(folder.glob("cells/*/*/attempt-1/journal.jsonl"))
    assert [len(read_journal(j).outcomes) for j in journals] == [shape.per_attempt] * 4
    report = audit_bundle(folder)
    assert report.ok, [f.line for f in report.findings]


def _audit_json(folder: Path, processes: int) -> dict[str, object]:
    """``faceoff audit --json`` as the operator runs it: a process of its own (one thread,
    so that it may fork its workers)."""
    done = subprocess.run(
        [sys.executable, "-m", "flows", "audit", str(folder), "--json", f"--workers={processes}"],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stderr  # 5: the audit found problems
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_an_audit_in_worker_processes_finds_what_one_process_finds_in_the_same_order(
    tmp_path: Path, host_facts: HostFacts, source_facts: SourceFacts
) -> None:
    shape = Shape(requests=60, cells=3, concurrency=4, input_tokens=192, output_tokens=16)
    folder = generate(tmp_path, shape)
    write_bundle(folder, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts)
    summaries = sorted(folder.glob("cells/*/*/attempt-1/summary.json"))
    for summary in (summaries[0], summaries[-1]):  # a finding in the first and the last cell
        summary.write_text(summary.read_text().replace('"n": ', '"n": 1', 1))
    alone, shared = _audit_json(folder, 1), _audit_json(folder, 3)
    assert alone == shared
    assert alone["ok"] is False
    recomputed = next(c for c in alone["checks"] if c["id"] == "summaries")  # type: ignore[attr-defined]
    edited = [s.relative_to(folder).as_posix() for s in (summaries[0], summaries[-1])]
    assert [f["file"] for f in recomputed["findings"]] == edited
