"""Where a campaign run's orchestration time goes: named spans of each cell run, opt-in.

With ``FACEOFF_SPANS=FILE`` in the run's environment, the campaign flow appends one
JSON line per span to FILE: ``{"span", "cell", "arm", "start_ns", "end_ns"}`` on the
monotonic clock the load client stamps its journal with (``perf_counter_ns``), so a
cell run's spans and its journal's requests line up. ``benchmarks.cell_overhead``
reads them. Unset (the default), nothing is timed or written. The file lies outside
the bundle: it measures faceoff, not the engines.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SPANS_ENV = "FACEOFF_SPANS"

# The spans of one cell run, outermost first (``benchmarks.cell_overhead`` prints them).
CELL_TASK = "cell task"  # the Prefect task call, as the flow makes it
LANE_CHECK = "lane check"  # the flow's death check before the cell (/health)
POLICY = "stop policy"  # the stop policy's read of the ledger before the cell
RUN_CELL = "run cell"  # the task's own function: everything below
BEGIN = "ledger begin"
PLAN = "plan and /tokenize"
COLLECTORS_START = "collectors start"
CLIENT = "client process"
COLLECTORS_STOP = "collectors drain"
TELEMETRY = "journal read and telemetry"
RECORD = "lane check and cell.json"
GUARD = "guard"
FILE = "verdict and ledger"


@dataclass(frozen=True)
class SpanLog:
    """Appends spans to ``path``; with no path, ``span`` times nothing."""

    path: Path | None = None
    clock: Callable[[], int] = time.perf_counter_ns

    @contextmanager
    def span(self, name: str, cell: str, arm: str) -> Iterator[None]:
        if self.path is None:
            yield
            return
        start = self.clock()
        try:
            yield
        finally:
            line = {"span": name, "cell": cell, "arm": arm, "start_ns": start,
                    "end_ns": self.clock()}  # fmt: skip
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")


def span_log(environ: Mapping[str, str]) -> SpanLog:
    """The run's span log: ``FACEOFF_SPANS``'s file, else none."""
    path = environ.get(SPANS_ENV)
    return SpanLog(Path(path) if path else None)
