"""The request journal: one JSON line per terminal request, fsync'd in groups.
The same concept at another layer: ``faceoff.formats.attempt.journal`` (a line's model).

The writer runs in its own thread fed by a queue, so that building a line,
serialising it and waiting for fsync never run on the client's event loop between
two chunk reads: the client submits a finished exchange as a function that makes its
line. The thread writes each line as soon as it is made (``write()`` into the page
cache: a SIGKILL of the client keeps it), then fsyncs once for every line that was
waiting (a power loss keeps them from then on). The reader keeps every complete
line and reports a torn last line (a kill in the middle of a write) instead of
raising.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from faceoff.artifact import first_error
from faceoff.errors import FaceoffError
from faceoff.files import JsonlAppender, JsonlScan
from faceoff.formats.attempt.journal import RequestOutcome
from faceoff.recent import Recent, identity

Line = RequestOutcome | Callable[[], RequestOutcome]  # a line, or what makes it on the writer

_STOP = object()


class JournalWriter:
    """Appends lines from a dedicated thread, fsync'ing a group at a time; ``submit`` never
    blocks. ``written`` counts the lines fsync'd; ``on_written`` is called for each after its
    group's fsync."""

    def __init__(
        self, path: Path, *, on_written: Callable[[RequestOutcome], None] | None = None
    ) -> None:
        self.path = Path(path)
        self.written = 0
        self.callback_error: Exception | None = None
        self._on_written = on_written
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._appender = JsonlAppender(self.path, durable=True)
        self._thread = threading.Thread(target=self._drain, name="journal-writer", daemon=True)
        self._thread.start()

    def submit(self, line: Line) -> None:
        if self._failure is not None:
            raise self._error()
        self._queue.put(line)

    def close(self, timeout_s: float = 60.0) -> None:
        """Write everything submitted, then stop; raises if any line could not be written."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise FaceoffError(
                f"journal writer did not finish within {timeout_s} s",
                where=str(self.path),
                fix="check the disk holding the journal",
            )
        try:
            self._appender.close()
        except OSError as exc:  # the buffered remains of a failed line
            self._failure = self._failure or exc
        if self._failure is not None:
            raise self._error()

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drain(self) -> None:
        stopping = False
        while not stopping:
            group = [self._queue.get()]  # wait for one, then take all that waited with it
            while not self._queue.empty():
                group.append(self._queue.get_nowait())
            stopping = group[-1] is _STOP
            self._commit([item for item in group if item is not _STOP])

    def _commit(self, group: list[object]) -> None:
        """Write each line, then one fsync for them all; only then do they count."""
        lines = [line for item in group if (line := self._write(item)) is not None]
        if not lines:
            return
        try:
            self._appender.sync()
        except OSError as exc:
            self._failure = self._failure or exc
            return
        self.written += len(lines)
        for line in lines:
            self._notify(line)

    def _write(self, item: object) -> RequestOutcome | None:
        if self._failure is not None:
            return None  # keep draining so submitters never block; close() reports it
        try:
            line = item() if callable(item) else item
            assert isinstance(line, RequestOutcome)
            self._appender.append(line, sync=False)
        except BaseException as exc:  # a lost line must surface, never vanish
            self._failure = exc
            return None
        return line

    def _notify(self, outcome: RequestOutcome) -> None:
        """Progress is best effort: a failing callback never stops the journal."""
        if self._on_written is None or self.callback_error is not None:
            return
        try:
            self._on_written(outcome)
        except Exception as exc:  # reported by close(), after every line is written
            self.callback_error = exc

    def _error(self) -> FaceoffError:
        return FaceoffError(
            f"could not append to the journal: {self._failure}",
            where=str(self.path),
            fix="free disk space or fix permissions, then rerun the cell",
        )


@dataclass
class JournalContents:
    """The outcomes of a journal and what could not be read."""

    outcomes: list[RequestOutcome] = field(default_factory=list)
    torn_tail: str | None = None  # unterminated last line, as a kill mid-write leaves it
    bad_lines: list[int] = field(default_factory=list)  # 1-based lines that are not JSON
    invalid: list[str] = field(default_factory=list)  # JSON lines that are not outcomes

    def __iter__(self) -> Iterator[RequestOutcome]:
        return iter(self.outcomes)

    @property
    def intact(self) -> bool:
        return self.torn_tail is None and not self.bad_lines and not self.invalid


class JournalScan:
    """A journal read one line at a time: readers that reduce it never hold all of it.

    Iterating yields every complete, valid outcome; ``torn_tail``, ``bad_lines`` and
    ``invalid`` are those of ``read_journal`` once it has been iterated.
    """

    def __init__(self, path: Path) -> None:
        self._lines = JsonlScan(path)
        self.invalid: list[str] = []

    @property
    def torn_tail(self) -> str | None:
        return self._lines.torn_tail

    @property
    def bad_lines(self) -> list[int]:
        return self._lines.bad_lines

    def __iter__(self) -> Iterator[RequestOutcome]:
        self.invalid = []
        records = 0  # lines that are JSON: "record N" counts these, as an editor's search would
        for number, line in self._lines.texts():
            try:  # one parse, straight into the model: the journal's hot path
                outcome = RequestOutcome.model_validate_json(line)
            except ValidationError as exc:
                if exc.errors()[0]["type"] == "json_invalid":
                    self._lines.bad_lines.append(number)
                    continue
                records += 1
                self.invalid.append(f"record {records}: {first_error(exc)}")
                continue
            records += 1
            yield outcome


def read_journal(path: Path) -> JournalContents:
    """Every complete, valid line of a journal; problems are reported, not raised.

    The last two journals read are kept (``faceoff.recent``): a cell's incumbent and
    candidate, which its summary, verdict and comparison entry each read.
    """
    key = identity(path)
    return _scan(path) if key is None else _READ.get(key, lambda: _scan(path))


def _scan(path: Path) -> JournalContents:
    scan = JournalScan(path)
    outcomes = list(scan)
    return JournalContents(outcomes, scan.torn_tail, scan.bad_lines, scan.invalid)


_READ: Recent[JournalContents] = Recent(2)
