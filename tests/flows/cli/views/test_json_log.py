"""Output a scheduler keeps: a redirected console is plain and full width, Prefect's
settings name the JSON formatter that exists, and a JSON line holds the formatted message."""

from __future__ import annotations

import importlib
import io
import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from flows.cli.views.console import LOG_WIDTH, make_console
from flows.cli.views.ending import CellsTable
from flows.cli.views.json_log import JsonLines, log_line
from flows.prefect.server import JSON_FORMATTER, prefect_defaults


def test_a_redirected_console_cuts_no_line_and_no_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # cron's, systemd's or tee's pipe
    console = make_console()
    assert not console.is_terminal and console.width == LOG_WIDTH and console.no_color
    verdict = "no difference (better 0, worse 0, no difference 7); TTFT 1.01× (0.97–1.05)"
    table = CellsTable(["cell", "an-incumbent-arm", "a-candidate-arm vs an-incumbent-arm"],
                       [["natural-600-c1", "accepted", verdict]], verdicts=1)  # fmt: skip
    with console.capture() as captured:
        console.print(table)
    (line,) = [row for row in captured.get().splitlines() if row.startswith("natural")]
    assert line.rstrip().endswith(verdict) and "…" not in line


def test_columns_still_rule_where_it_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "90")
    assert make_console().width == 90


def test_the_json_formatter_prefect_is_told_of_is_this_one(tmp_path: Path) -> None:
    settings = prefect_defaults({}, tmp_path, json_logs=True)
    assert settings["PREFECT_LOGGING_HANDLERS_CONSOLE_FORMATTER"] == "json"
    module, _, name = settings["PREFECT_LOGGING_FORMATTERS_JSON_CLASS"].rpartition(".")
    assert getattr(importlib.import_module(module), name) is JsonLines
    assert settings["PREFECT_LOGGING_FORMATTERS_JSON_CLASS"] == JSON_FORMATTER


def test_a_json_line_holds_the_formatted_message_its_run_and_its_exception() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("prefect.flow_runs", logging.WARNING, "f.py", 1,
                                   "cell %s on %s", ("c1", "inc"), sys.exc_info())  # fmt: skip
    record.flow_run_name = "brave-otter"
    line = json.loads(JsonLines("default", None, "%").format(record))
    assert (line["level"], line["message"], line["flow_run_name"]) == (
        "WARNING",
        "cell c1 on inc",
        "brave-otter",
    )
    assert "ValueError: boom" in line["exception"] and "\n" not in JsonLines().format(record)
    said = json.loads(
        log_line("preflight: WARN x", record_time(), level="WARNING", fields={"exit": 3})
    )
    assert (said["logger"], said["exit"]) == ("faceoff.run", 3)


def record_time() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)
