"""`faceoff export`: the campaign's figures as CSV and JSON rows that read back to exactly
the figures of its comparison.json."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from evidence.bundle.write import BundleIndex
from evidence.views.export import ExportRows
from tests.foundation.cli import faceoff


def test_csv_and_json_round_trip_every_figure_of_the_comparison(built: BundleIndex) -> None:
    comparison = built.comparison
    as_csv = faceoff("export", str(built.root), "--format", "csv")
    as_json = faceoff("export", str(built.root), "--format", "json")
    assert as_csv.returncode == 0 and as_json.returncode == 0, as_csv.stderr + as_json.stderr
    exported = ExportRows.model_validate_json(as_json.stdout)
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert len(table) == len(exported.rows) > 0
    read = {(r["cell"], r["arm"], r["metric"]): r for r in table}
    rows = {(r.cell, r.arm, r.metric): r for r in exported.rows}
    figures = 0
    for cell in comparison.cells:
        for arm in cell.arms:
            for metric, stats in arm.metrics.items():
                row, line = rows[(cell.id, arm.arm, metric)], read[(cell.id, arm.arm, metric)]
                assert (row.n, row.p50, row.p95, row.mean) == (stats.n, stats.p50, stats.p95,
                                                                stats.mean)  # fmt: skip
                assert line["p50"] == ("" if stats.p50 is None else repr(stats.p50))
                figures += 1
            if arm.aggregate_output_tps is not None:
                key = (cell.id, arm.arm, "aggregate_output_tps")
                assert float(read[key]["mean"]) == arm.aggregate_output_tps
    assert figures == sum(len(a.metrics) for c in comparison.cells for a in c.arms)
    assert json.loads(as_json.stdout)["schema_version"] == 2


def test_an_export_into_a_file_says_how_many_rows(built: BundleIndex, tmp_path: Path) -> None:
    out = tmp_path / "figures.csv"
    done = faceoff("export", str(built.root), "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert done.stdout == f"{len(lines) - 1} rows of {built.comparison.campaign} written to {out}\n"
