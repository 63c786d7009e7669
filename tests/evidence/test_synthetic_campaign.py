"""The benchmarks' synthetic campaign generator writes a folder that bundles and audits clean."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from benchmarks.synthetic_campaign import Shape, generate
from evidence.audit import audit_bundle
from evidence.bundle import write_bundle
from evidence.host_facts import HostFacts, SourceFacts
from workload.journal import read_journal


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
