"""A table of plain text cells that prints exactly as rich's ``Table`` prints it, in a
fraction of the time.

rich lays out every cell of every row, about a millisecond a row on a slow host, and
``faceoff status --all-hosts`` lists a year of nights from each host of a shared ledger.
Cells are plain text, shown as they are (never read as markup). Where every row fits the
console on one line, rich's layout is known without it: each column as wide as its
widest cell, each row one line. Then rich lays out the title, the header and one row of
the widest cells (the same column widths), and every row is written in that row's place
as one line of the same box. Otherwise rich lays out the whole table.
``tests/flows/cli/views/test_plain_table.py`` holds the two to the same output.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

PADDING = 1  # rich's default cell padding, left and right


class PlainTable:
    """Rows of plain text under a title and column headers (rich's defaults otherwise)."""

    def __init__(
        self, title: str, columns: Sequence[str], *, title_justify: JustifyMethod = "center"
    ) -> None:
        self.title = title
        self.title_justify: JustifyMethod = title_justify
        self.columns = list(columns)
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(cells)

    def rich_table(self, rows: Sequence[Sequence[str]] | None = None) -> Table:
        """The same table as rich's own (with ``rows``: those rows instead)."""
        table = Table(title=self.title, title_justify=self.title_justify)
        for column in self.columns:
            table.add_column(Text(column))
        for row in self.rows if rows is None else rows:
            table.add_row(*map(Text, row))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._widths()
        if widths is None or _table_width(widths) > options.max_width or not self.rows:
            yield self.rich_table()
            return
        widest = [max((*column, header), key=cell_len) for header, *column in self._columns()]
        frame = self.rich_table([widest, widest])  # a middle row and a last row, as rich draws
        lines = list(Segment.split_lines(console.render(frame, options)))
        top, bottom = lines[:-3], lines[-1]
        for line in top:
            yield from line
            yield Segment.line()
        yield from self._body(console, options, frame, widths)
        yield from bottom
        yield Segment.line()

    def _columns(self) -> Iterator[tuple[str, ...]]:
        return zip(self.columns, *self.rows, strict=True)

    def _widths(self) -> list[int] | None:
        """Each column's width, or None where a cell is not one line of printable text."""
        for column in self._columns():
            if not all(cell.isprintable() for cell in column):
                return None
        return [max(map(cell_len, column)) for column in self._columns()]

    def _body(
        self, console: Console, options: ConsoleOptions, frame: Table, widths: list[int]
    ) -> Iterator[Segment]:
        assert frame.box is not None
        box = frame.box.substitute(options, safe=console.safe_box)
        border = console.get_style(frame.style or "") + console.get_style(frame.border_style or "")
        pad = " " * PADDING
        for index, row in enumerate(self.rows):
            last = index == len(self.rows) - 1
            left, divider, right = (
                (box.foot_left, box.foot_vertical, box.foot_right)
                if last
                else (box.mid_left, box.mid_vertical, box.mid_right)
            )
            cells = [
                f"{pad}{c}{' ' * (w - cell_len(c))}{pad}" for c, w in zip(row, widths, strict=True)
            ]
            if border:
                yield Segment(left, border)
                for n, cell in enumerate(cells):
                    yield from (Segment(divider, border), Segment(cell)) if n else (Segment(cell),)
                yield Segment(right, border)
            else:  # an unstyled border: the row is one segment
                yield Segment(left + divider.join(cells) + right)
            yield Segment.line()


def _table_width(widths: Sequence[int]) -> int:
    return sum(widths) + len(widths) * (2 * PADDING + 1) + 1
