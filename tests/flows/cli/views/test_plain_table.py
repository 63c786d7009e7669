"""``PlainTable`` prints exactly what rich's ``Table`` prints for the same rows as text:
plain and on a colour terminal, ASCII-only, with wide characters, markup-like and
emoji-like cells (shown as they are), and on a console too narrow for the rows (where
rich lays it out itself)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from flows.cli.views.plain_table import PlainTable

COLUMNS = ("name", "host", "started", "duration", "decision")
ROWS = [
    ("nightly-gpu-host-1-20251201", "gpu-host-1", "2025-12-01 01:00Z", "2:00:00", "pending"),
    ("nightly-gpu-host-2-20251201", "—", "2025-12-01 01:15Z", "12:03", "promote"),
    ("夜間-キャンペーン", "gpu-host-3", "2025-12-01 01:30Z", "1:02:03", ""),
    ("range [1.2, 3.4]", "gpu:host:4", "2025-12-01 01:45Z", "0:00", "no_promotion"),
]


def shown(table: object, **console: object) -> str:
    out = io.StringIO()
    Console(file=out, highlight=False, **console).print(table)  # type: ignore[arg-type]
    return out.getvalue()


def plain_table(rows: list[tuple[str, ...]], **kwargs: object) -> PlainTable:
    table = PlainTable("campaigns of every host", COLUMNS, **kwargs)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


@pytest.mark.parametrize(
    "console",
    [
        {"width": 160},
        {"width": 160, "force_terminal": True, "color_system": "truecolor"},
        {"width": 160, "safe_box": True, "legacy_windows": True},
        {"width": 40},  # too narrow: rich wraps the cells
    ],
)
@pytest.mark.parametrize(
    "rows",
    [
        ROWS,
        ROWS[:1],
        [*ROWS, ("[bold]loud[/bold]", "h", "s", "d", "x")],
        [*ROWS, ("a :smile: b", "h", "s", "d", "x")],
        [*ROWS, ("two\nlines", "h", "s", "d", "x")],
    ],
)
@pytest.mark.parametrize("justify", ["center", "left"])
def test_it_prints_what_richs_table_prints(
    console: dict[str, object], rows: list[tuple[str, ...]], justify: str
) -> None:
    table = plain_table(rows, title_justify=justify)
    assert shown(table, **console) == shown(table.rich_table(), **console)


def test_a_cell_is_shown_as_it_is_never_as_markup() -> None:
    table = plain_table([("[bold]loud[/bold]", "a :smile: b", "s", "d", "x")])
    assert "[bold]loud[/bold]" in shown(table, width=160)
    assert "a :smile: b" in shown(table, width=160)


def test_no_rows_print_the_header_as_rich_does() -> None:
    table = plain_table([])
    assert shown(table, width=160) == shown(table.rich_table(), width=160)
