"""The audit's checklist and its finding paths: output shaping over a real frozen matrix."""

from __future__ import annotations

from pathlib import Path

from evidence.audit.checklist import checklist, lines
from evidence.audit.diff import differences
from evidence.audit.reverify import RECEIPT, TICKETS, AuditReport, Finding
from faceoff.formats.frozen_matrix import freeze
from matrix.toml.reader import load_matrix
from tests.e2e.matrices import arm, campaign, write_matrix


def bundle_without_protected_files(tmp_path: Path) -> Path:
    data = campaign("no-protected", [arm("inc", "incumbent"), arm("cand", "candidate")])
    frozen = freeze(load_matrix(write_matrix(tmp_path, data)))
    root = tmp_path / "no-protected"
    root.mkdir()
    frozen.write(root / "matrix.frozen.json")
    return root


def test_no_protected_files_declared_is_a_warning(tmp_path: Path) -> None:
    root = bundle_without_protected_files(tmp_path)
    output = checklist(AuditReport(root, step=TICKETS))
    protected = output.checks[-1]
    assert (protected.id, protected.count, protected.result) == ("protected_files", 0, "warning")
    assert "none declared" in protected.note
    shown = lines(output)
    assert shown[-1] == f"{root}: OK"  # the verdict last, where a log's tail shows it
    warning = "  [WARN] protected operator files declared and unchanged (0) — none declared"
    assert any(line.startswith(warning) for line in shown)


def test_a_finding_is_listed_under_the_check_that_found_it(tmp_path: Path) -> None:
    root = bundle_without_protected_files(tmp_path)
    report = AuditReport(root, step=TICKETS)
    report.findings.append(Finding("receipt.json", "campaign", "says 'x'", RECEIPT))
    output = checklist(report)
    failed = [c for c in output.checks if c.result == "failed"]
    assert [c.id for c in failed] == ["receipt"] and not output.ok
    assert failed[0].findings[0].field == "campaign"
    assert "  [FAIL] restoration receipt verifies" in "\n".join(lines(output))
    assert next(c for c in output.checks if c.id == "signatures").result == "ok"


def test_finding_paths_name_list_elements_by_their_ids() -> None:
    stored = {
        "cells": [
            {"id": "natural-600-c1",
             "arms": [{"arm": "inc", "p50": 1.0}, {"arm": "cand", "p50": 2.0}],
             "ratios": [{"candidate": "cand", "metric": "ttft_s", "ratio": 0.5}]},
        ],
        "values": [1, 2],
    }  # fmt: skip
    fresh = {
        "cells": [
            {"id": "natural-600-c1",
             "arms": [{"arm": "inc", "p50": 1.0}, {"arm": "cand", "p50": 3.0}],
             "ratios": [{"candidate": "cand", "metric": "ttft_s", "ratio": 0.7}]},
        ],
        "values": [1, 5],
    }  # fmt: skip
    assert [path for path, _, _ in differences(stored, fresh)] == [
        "cells[natural-600-c1].arms[cand].p50",
        "cells[natural-600-c1].ratios[cand/ttft_s].ratio",
        "values[1]",
    ]
