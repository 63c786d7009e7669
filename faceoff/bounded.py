"""Bounded reading: every file faceoff opens from a bundle or a workdir, opened so that a
hostile folder can neither hang nor crash the command reading it.

A bundle is evidence handed to faceoff by whoever holds the folder. A FIFO where a record
should be blocks a plain ``open`` forever; a 200 MB line, JSON nested a thousand deep, a
5,000-byte name or 1,500 nested folders each make an unguarded reader raise from deep
inside the standard library. Here a file is opened without following a link and without
blocking (``O_NOFOLLOW | O_NONBLOCK``), checked to be a regular file (``fstat``) before a
byte is read, and read only up to its kind's cap; JSON is refused when it nests deeper than
any faceoff record; names and depth are capped; folders are walked with a stack, never by
recursion. Whatever is wrong ends in ``Unreadable``, a ``FaceoffError`` naming the file and
why, which the audit turns into a finding.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faceoff.errors import FaceoffError

MiB = 1 << 20
# Caps per kind of file. A record faceoff writes is far below its cap; a bundle file over
# one was not written by faceoff.
RECORD_CAP = 256 * MiB  # a JSON record: comparison.json of a large campaign is tens of MiB
SEAL_CAP = 16 * MiB  # the DSSE envelope: a line per file of the bundle
SUMS_CAP = 64 * MiB  # SHA256SUMS: one line per file
LINE_CAP = 1 * MiB  # one line of a JSON-lines file (a review, a journal outcome)
TEXT_CAP = 64 * MiB  # a rendered view (RESULT.md, report.html)
JSON_DEPTH = 64  # no faceoff record nests a tenth as deep
NAME_BYTES = 255  # one path component (NAME_MAX)
PATH_BYTES = 4096  # a whole path below the bundle (PATH_MAX)
WALK_DEPTH = 32  # folders below the bundle's root; the deepest faceoff writes is 5

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings skipped whole: brackets in them


class Unreadable(FaceoffError):
    """A file faceoff will not read: not a regular file, too big, too deep, badly named."""


def name_problem(name: str) -> str | None:
    """Why a path (relative to a bundle) cannot be one of its files, or None."""
    encoded = name.encode("utf-8", errors="surrogateescape")
    if len(encoded) > PATH_BYTES:
        return f"its name is {len(encoded)} bytes, over the {PATH_BYTES} a path may have"
    parts = encoded.split(b"/")
    if any(len(part) > NAME_BYTES for part in parts):
        return f"a part of its name is over the {NAME_BYTES} bytes a file name may have"
    if name.startswith("/") or b".." in parts:
        return "its name leaves the bundle (an absolute path or '..')"
    return None


def open_regular(path: Path) -> int:
    """A descriptor of the regular file at ``path``, opened without following a link and
    without blocking on a FIFO; ``Unreadable`` for anything else."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _refused(path, exc) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Unreadable(f"not a regular file ({_kind(mode)})", where=str(path), fix=_FIX)
    return fd


def read_bytes(path: Path, cap: int) -> bytes:
    """The bytes of the regular file at ``path``; ``Unreadable`` when it holds over ``cap``."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size > cap:
            raise over_cap(path, size, cap)
        data = handle.read(cap + 1)  # a file growing while read is held to its cap too
    if len(data) > cap:
        raise over_cap(path, len(data), cap)
    return data


def read_text(path: Path, cap: int) -> str:
    return read_bytes(path, cap).decode("utf-8", errors="replace")


def read_json(path: Path, cap: int = RECORD_CAP) -> Any:
    """The JSON value in the file; ``Unreadable`` when it is not JSON or nests too deeply."""
    return loads(read_bytes(path, cap), str(path))


def loads(raw: bytes | str, where: str) -> Any:
    """``json.loads`` that refuses JSON nested over ``JSON_DEPTH`` instead of recursing."""
    data = raw.encode("utf-8", errors="surrogateescape") if isinstance(raw, str) else raw
    if depth_over(data, JSON_DEPTH):
        raise Unreadable(f"JSON nested deeper than {JSON_DEPTH} levels", where=where, fix=_FIX)
    try:
        return json.loads(data)
    except ValueError as exc:
        raise Unreadable(f"not JSON: {exc}", where=where, fix=_FIX) from None


def depth_over(data: bytes, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (no bracket count that
    low can, which spares the scan for almost every file)."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for token in _TOKENS.finditer(data):
        mark = token[0]
        if mark in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif mark in (b"]", b"}"):
            depth -= 1
    return False


def read_lines(path: Path, cap: int = LINE_CAP) -> Iterator[tuple[int, bytes]]:
    """Each line of the regular file at ``path`` (1-based number, bytes without its
    newline), streamed: a line over ``cap`` is ``Unreadable``, never held whole."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(cap + 1), b""), start=1):
            if len(raw) > cap:
                raise Unreadable(f"line {number} is over {cap} bytes", where=str(path), fix=_FIX)
            yield number, raw.rstrip(b"\r\n")


@dataclass(frozen=True)
class Entry:
    """An entry under a walked folder."""

    name: str  # relative to the root, '/'-separated
    kind: str  # "file", "dir", "link" or a special file's kind (``_kind``)
    problem: str | None = None  # why it was not walked into, or cannot be a bundle file
    size: int = 0  # as lstat says
    mtime_ns: int = 0


def walk(root: Path) -> Iterator[Entry]:
    """Every entry under ``root``, in no particular order, without following links and
    without recursion: a folder deeper than ``WALK_DEPTH`` or a name over the caps is
    yielded with its problem and not entered."""
    stack = [("", 0)]
    while stack:
        prefix, depth = stack.pop()
        with os.scandir(Path(root) / prefix if prefix else root) as found:
            for item in found:
                name = f"{prefix}{item.name}"
                entry = _entry(item, name, depth)
                yield entry
                if entry.kind == "dir" and entry.problem is None:
                    stack.append((f"{name}/", depth + 1))


def regular_files(root: Path) -> list[Path]:
    """Every regular file under ``root`` whose name is within the caps, in path order
    (``walk`` says what else is there)."""
    found = (e for e in walk(root) if e.kind == "file" and e.problem is None)
    return sorted(Path(root) / e.name for e in found)


def _entry(item: os.DirEntry[str], name: str, depth: int) -> Entry:
    found = item.stat(follow_symlinks=False)
    mode = found.st_mode
    kind = "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else _kind(mode)
    problem = name_problem(name)
    if problem is None and kind == "dir" and depth >= WALK_DEPTH:
        problem = f"folders nest over {WALK_DEPTH} deep here; faceoff writes at most 5"
    return Entry(name, kind, problem, found.st_size, found.st_mtime_ns)


def over_cap(path: Path, size: int, cap: int) -> Unreadable:
    return Unreadable(f"{size} bytes, over the {cap} bytes faceoff reads of such a file",
                      where=str(path), fix=_FIX)  # fmt: skip


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISLNK, "link"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISDIR, "folder")):  # fmt: skip
        if test(mode):
            return kind
    return "special file"


def _refused(path: Path, exc: OSError) -> OSError | Unreadable:
    why = _REFUSED.get(exc.errno or 0)
    if why is None:
        return exc  # missing or unreadable: the caller's own error says so
    return Unreadable(f"not a regular file ({why})", where=str(path), fix=_FIX)


_REFUSED = {
    errno.ELOOP: "a link, which is never followed",
    errno.ENAMETOOLONG: "its name is too long",
    errno.ENXIO: "a socket or device",
    errno.EISDIR: "a folder",
}
_FIX = "this file was not written by faceoff: restore the bundle from a signed copy"
