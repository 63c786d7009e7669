"""The running attempt as the live view follows it: its files are read as they grow.

The live view refreshes twice a second in the orchestrator process, beside the
collectors' sampling threads, so a refresh reads only what was appended since the
last one: the plan once (it never changes after it is written), then the new
complete lines of the journal and of the sample files. Rereading them whole would
cost more the longer the cell runs (a journal line carries every chunk's arrival).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, RequestOutcome
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from workload.metrics import ttft

SOURCES = ("engine", "gpu", "host")


@dataclass(frozen=True)
class Health:
    source: str
    samples: int
    ok: int


@dataclass
class Tail:
    """The complete lines a JSON-lines file gained since the last read."""

    path: Path
    offset: int = 0

    def new_records(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        self.offset += len(complete)
        return [r for line in complete.splitlines() if (r := _record(line)) is not None]


class AttemptProgress:
    """Requests done, their TTFTs and the sample health of one attempt folder, so far
    (``phase``: the requests counted, the scored ones of a cell or a lane's warmups)."""

    def __init__(self, folder: Path, phase: Phase = Phase.SCORED) -> None:
        self.folder = folder
        self.phase = phase
        self.total: int | None = None  # requests planned; None until the plan is written
        self.done = 0
        self._ttfts: list[float] = []
        self._journal = Tail(folder / JOURNAL_NAME)
        self._samples = {source: Tail(folder / f"{source}.jsonl") for source in SOURCES}
        self._health = {source: Health(source, 0, 0) for source in SOURCES}

    def catch_up(self) -> AttemptProgress:
        if self.total is None:
            self.total = _planned(self.folder, self.phase)
        for outcome in map(_outcome, self._journal.new_records()):
            if outcome is not None and _counts(outcome.phase, self.phase):
                self.done += 1
                if (value := ttft(outcome).value) is not None:
                    self._ttfts.append(value)
        for source, tail in self._samples.items():
            records = tail.new_records()
            ok = sum(1 for r in records if r.get("status") == "ok")
            seen = self._health[source]
            self._health[source] = Health(source, seen.samples + len(records), seen.ok + ok)
        return self

    @property
    def ttft_p50_s(self) -> float | None:
        return statistics.median(self._ttfts) if self._ttfts else None

    def health(self) -> list[Health]:
        """Each source whose sample file exists, in ``SOURCES`` order."""
        return [self._health[s] for s, tail in self._samples.items() if tail.path.exists()]


def _planned(folder: Path, phase: Phase) -> int | None:
    try:
        plan = RequestPlan.read(folder / PLAN_NAME)
    except FaceoffError:
        return None  # not planned yet
    if phase is Phase.SCORED and plan.cell.search is not None:
        return plan.cell.search.budget  # a needle search's probes, at most
    return len(plan.phase(phase))


def _counts(line: Phase, followed: Phase) -> bool:
    """Whether a journal line counts toward the followed phase (a search's probes stand for
    its scored requests)."""
    return line is followed or (followed is Phase.SCORED and line is Phase.PROBE)


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _outcome(record: dict[str, Any]) -> RequestOutcome | None:
    try:
        return RequestOutcome.model_validate(record)
    except ValidationError:
        return None  # read_journal reports such lines; the view only counts good ones
