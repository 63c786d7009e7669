"""``faceoff run --log-format json``: each log line of the run as one JSON object, for log
shippers (journald, Loki, Elasticsearch), and the run's end as one more.

Prefect's console handler takes its formatter from Prefect's logging settings; the run names
this one there (``flows.prefect.server.JSON_FORMATTER``), so Prefect's own records and the
flow's come out alike: time (UTC, ISO 8601), level, logger, the message formatted, and the
flow or task run it belongs to when there is one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

RUN_FIELDS = ("flow_run_name", "flow_run_id", "task_run_name", "task_run_id")


class JsonLines(logging.Formatter):
    """One JSON object a record, on one line; Prefect's ``(fmt, datefmt, style)`` taken and
    not used."""

    def __init__(
        self, fmt: str | None = None, datefmt: str | None = None, style: str = "%"
    ) -> None:
        super().__init__()

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {k: str(getattr(record, k)) for k in RUN_FIELDS if getattr(record, k, None)}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def log_line(
    message: str, at: datetime, *, level: str = "INFO", fields: Mapping[str, object] | None = None
) -> str:
    """A line of faceoff's own (a preflight WARN, the run's end) in the same shape."""
    time = at.astimezone(UTC).isoformat(timespec="milliseconds")
    line = {"time": time, "level": level, "logger": "faceoff.run", "message": message}
    return json.dumps(line | dict(fields or {}), ensure_ascii=False)
