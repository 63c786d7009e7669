"""``faceoff validate`` and ``faceoff freeze``: a matrix checked, its plan shown, its frozen
content written."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from evidence.comparison.power_table import PowerTable
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.preflight import CheckStatus
from flows.cli.output_file import fresh_file
from flows.cli.power import planned_power, power_view
from flows.cli.script_output import PlanOutput, plan_output
from flows.cli.views import console as views
from lanes.commands import binding_line
from lanes.deadlines import worst_case
from matrix.aa import aa_line, aa_twin
from matrix.model import Matrix
from matrix.toml.reader import FIX_FIELDS, MatrixError, load_matrix


def validate(
    path: Path,
    *,
    as_json: bool,
    aa: bool = False,
    power: bool = False,
    workdir: Path = Path("runs"),
    db: str | None = None,
) -> None:
    """``power``: the rule's power table too, each cell's variance learned from the ledger of
    ``workdir`` (or ``db``) where it holds earlier nights."""
    frozen = freeze(matrix_of(path, aa=aa))
    table = planned_power(frozen, workdir, db) if power else None
    output = plan_output(frozen, power=table)
    refuse_failures(path, output)
    if as_json:
        typer.echo(output.model_dump_json(indent=2))
        return
    out = views.make_console()
    if aa:
        out.print(escape(aa_line(frozen.matrix)), highlight=False)
    out.print(views.plan_table(frozen))
    for line in plan_lines(frozen, output):
        out.print(escape(line), highlight=False, soft_wrap=True)  # `[families.…]` is no markup
    if table is not None:
        _print_power(out, table)
    out.print(f"matrix id: {frozen.matrix_id}")


def refuse_failures(path: Path, output: PlanOutput) -> None:
    """A FAIL the matrix alone shows would stop the run at its preflight: the matrix is
    refused now, exit 2, rather than passed with a warning."""
    failures = [w for w in output.warnings if w.status is CheckStatus.FAIL]
    if failures:
        raise MatrixError(
            "; ".join(f"{w.check}: {w.subject}: {w.finding}, fix: {w.fix}" for w in failures),
            where=str(path),
            fix=FIX_FIELDS,
        )


def plan_lines(frozen: FrozenMatrix, output: PlanOutput) -> list[str]:
    """Where each arm listens, its image in full, the cells, the order, the stop policy,
    the worst case and the warnings."""
    matrix = frozen.matrix
    lanes = [*matrix.arm_order(), *matrix.reference_arms]
    images = [f"image of {a.name}: {a.image}" for a in lanes if a.image]
    warnings = [f"warning: {w.line}" for w in output.warnings]
    return [
        *(binding_line(arm) for arm in lanes),
        *images,
        f"cells ({len(output.cell_ids)}): {', '.join(output.cell_ids)}",
        f"order: {output.order}",
        f"stop policy {output.stop_policy}: {output.stop_policy_sentence}",
        worst_case(matrix).sentence,
        *warnings,
        *(["no warnings: `faceoff preflight MATRIX` checks the host"] if not warnings else []),
    ]


def _print_power(out: Console, table: PowerTable) -> None:
    if not table.rows:
        out.print("power: the matrix declares no [rule], so nothing is planned to be decided")
        return
    out.print(power_view(table))
    for warning in table.warnings:
        out.print(escape(f"WARN {warning}"), highlight=False)


def matrix_of(path: Path, *, aa: bool) -> Matrix:
    """The matrix of ``path``, or with ``aa`` its A/A twin."""
    matrix = load_matrix(path)
    return aa_twin(matrix, where=path) if aa else matrix


def freeze_file(path: Path, output: Path, *, replace: bool) -> None:
    frozen = freeze(load_matrix(path))
    fresh_file(output)
    frozen.write(output, replace=replace)
    typer.echo(f"{output}: matrix id {frozen.matrix_id}")
