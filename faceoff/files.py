"""File writes that never leave half a file behind.
The same concept at another layer: ``flows.campaign.preflight.files``.

Whole files go through a temp file and ``os.replace``; append-only JSON-lines
files flush each line so a killed process keeps every line it finished, and
(optionally) fsync it, line by line or a group at a time, so a power loss does too.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from faceoff.bounded import Unreadable, loads, open_regular
from faceoff.errors import FaceoffError


def write_text_atomic(path: Path, text: str, *, replace: bool = False) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), replace=replace)


def write_bytes_atomic(path: Path, data: bytes, *, replace: bool = False) -> Path:
    path = Path(path)
    if path.exists() and not replace:
        raise FaceoffError(
            "refusing to overwrite an existing file",
            where=str(path),
            fix="pass replace=True if overwriting is intended",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)  # mkstemp's 0600 would hide bundles from reviewers
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class JsonlAppender:
    """Append-only JSON lines; each line is flushed, and fsync'd when ``durable``."""

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.durable = durable
        self._handle: IO[str] | None = self.path.open("a", encoding="utf-8")

    def append(self, record: BaseModel, *, sync: bool = True) -> None:
        """One compact JSON line, flushed to the OS (a kill of this process keeps it) and,
        when ``durable``, fsync'd (a power loss keeps it) unless ``sync`` is False: a
        writer of many lines then calls :meth:`sync` once for the group. pydantic's
        serializer is several times faster than ``json.dumps`` over ``model_dump``, which
        matters on the client's writer thread."""
        if self._handle is None:
            raise FaceoffError("append after close", where=str(self.path))
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()
        if sync:
            self.sync()

    def sync(self) -> None:
        """fsync every line appended so far, when ``durable``."""
        if self.durable and self._handle is not None:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class JsonlContents:
    """Parsed lines of a JSON-lines file, and what could not be parsed."""

    records: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: str | None = None  # an unterminated last line, as left by a kill
    bad_lines: list[int] = field(default_factory=list)  # 1-based numbers of corrupt lines


class JsonlScan:
    """A JSON-lines file read one line at a time, so that a file of any length streams.

    Iterating yields each parsed record; ``torn_tail`` and ``bad_lines`` are known
    once it has been iterated. Lines end as text mode reads them (``\\n``, ``\\r\\n``
    or ``\\r``), exactly as ``read_jsonl`` always split them.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.torn_tail: str | None = None
        self.bad_lines: list[int] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number, line in self.texts():
            try:
                yield loads(line, f"{self.path} line {number}")
            except Unreadable:  # not JSON, or nested deeper than any record
                self.bad_lines.append(number)

    def texts(self) -> Iterator[tuple[int, str]]:
        """Each complete, non-blank line with its 1-based number, not parsed: a reader that
        validates JSON straight into a model parses each line once. A line it finds is not
        JSON belongs in ``bad_lines``."""
        self.torn_tail, self.bad_lines = None, []
        if not self.path.exists():
            return
        number = 0
        with os.fdopen(open_regular(self.path), "rb") as handle:  # never a FIFO's wait
            for raw in handle:  # binary lines end at b"\\n" only; UTF-8 never splits there
                if b"\r" not in raw and raw.endswith(b"\n"):  # the usual line, taken as it is
                    number += 1
                    if not raw.isspace():
                        yield number, raw[:-1].decode("utf-8")
                    continue
                *lines, tail = _universal(raw.decode("utf-8")).split("\n")
                for line in lines:
                    number += 1
                    if line.strip():
                        yield number, line
                if tail:  # only the file's last chunk lacks its newline
                    self.torn_tail = tail


def _universal(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_jsonl(path: Path) -> JsonlContents:
    """Read every complete line; a torn last line is reported, not raised."""
    scan = JsonlScan(path)
    records = list(scan)
    return JsonlContents(records=records, torn_tail=scan.torn_tail, bad_lines=scan.bad_lines)
