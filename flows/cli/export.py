"""``faceoff export``: a campaign's figures as CSV or JSON rows (``evidence.views.export``),
on stdout or into a file."""

from __future__ import annotations

from pathlib import Path

import typer

from evidence.views.export import as_csv, export_rows
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.formats.bundle.comparison import COMPARISON_FILE, Comparison
from flows.cli.audit import bundle_folder
from flows.cli.output_file import fresh_file


def export(campaign: str, workdir: Path, db: str | None, *, form: str, out: Path | None) -> None:
    folder, _ = bundle_folder(campaign, workdir, db)  # the seal is the audit's to check
    path = folder / COMPARISON_FILE
    if not path.is_file():
        raise FaceoffError(
            "no comparison.json: the campaign has not closed",
            where=str(folder),
            fix="run its matrix to the end (faceoff run), then export",
        )
    exported = export_rows(Comparison.read(path))
    text = as_csv(exported) if form == "csv" else exported.model_dump_json(indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    fresh_file(out)
    write_text_atomic(out, text, replace=True)
    typer.echo(f"{len(exported.rows)} rows of {exported.campaign} written to {out}")
