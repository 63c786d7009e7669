"""``faceoff validate`` and ``faceoff freeze``: a matrix checked, its plan shown, its frozen
content written."""

from __future__ import annotations

from pathlib import Path

import typer

from flows.cli.output_file import fresh_file
from flows.cli.script_output import plan_output
from flows.cli.views import console as views
from lanes.commands import binding_line
from lanes.deadlines import worst_case
from matrix.aa import aa_line, aa_twin
from matrix.freeze import freeze
from matrix.model import Matrix
from matrix.rule_warnings import rule_warnings
from matrix.toml_reader import load_matrix


def validate(path: Path, *, as_json: bool, aa: bool = False) -> None:
    frozen = freeze(matrix_of(path, aa=aa))
    warnings = rule_warnings(frozen.matrix)
    if as_json:
        typer.echo(plan_output(frozen, warnings).model_dump_json(indent=2))
        return
    for warning in warnings:
        typer.echo(f"warning: {path}: {warning}", err=True)
    out = views.make_console()
    if aa:
        out.print(aa_line(frozen.matrix), highlight=False)
    out.print(views.plan_table(frozen))
    for arm in frozen.matrix.arm_order():
        out.print(binding_line(arm), highlight=False)
    out.print(worst_case(frozen.matrix).sentence, highlight=False)
    out.print(f"matrix id: {frozen.matrix_id}")


def matrix_of(path: Path, *, aa: bool) -> Matrix:
    """The matrix of ``path``, or with ``aa`` its A/A twin."""
    matrix = load_matrix(path)
    return aa_twin(matrix, where=path) if aa else matrix


def freeze_file(path: Path, output: Path, *, replace: bool) -> None:
    frozen = freeze(load_matrix(path))
    fresh_file(output)
    frozen.write(output, replace=replace)
    typer.echo(f"{output}: matrix id {frozen.matrix_id}")
