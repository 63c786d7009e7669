"""``faceoff tickets``: the open follow-up tickets across campaigns."""

from __future__ import annotations

from pathlib import Path

import typer

from evidence.views.terminal.console import tickets_table
from flows.cli.script_output import tickets_output
from flows.cli.views import console as views
from tickets.store import open_tickets


def tickets(workdir: Path, *, as_json: bool) -> None:
    found = open_tickets(workdir)
    if as_json:
        typer.echo(tickets_output(found).model_dump_json(indent=2))
        return
    views.make_console().print(tickets_table(found))
