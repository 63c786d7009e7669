"""``SHA256SUMS``: every file of the bundle, in the format ``sha256sum -c`` verifies.

One line per file, ``<64 hex>  <path relative to the bundle>``, sorted by path.
Names that coreutils would have to escape (a newline or a backslash) are refused
instead, so that the file stays readable by both tools. The operator's signature over
the bundle is ``evidence.folder.seal``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evidence.folder.layout import SUMS_FILE, CampaignFolder
from faceoff.bounded import SUMS_CAP, Entry, name_problem, read_text
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic

SHOWN = 10  # files named in a refusal; the audit lists them all


@dataclass(frozen=True)
class SumProblem:
    """A file whose hash does not match, or that is missing from one side."""

    path: str
    what: str


def sums_text(folder: CampaignFolder) -> str:
    lines = []
    for path in folder.files():
        name = path.relative_to(folder.root).as_posix()
        if "\n" in name or "\\" in name:
            raise FaceoffError(
                "a file name holds a newline or backslash, which SHA256SUMS cannot list plainly",
                where=str(path),
                fix="rename the file",
            )
        lines.append(f"{file_sha256(path)}  {name}\n")
    return "".join(lines)


def write_sums(folder: CampaignFolder) -> Path:
    """(Re)write SHA256SUMS over every file now in the bundle (``evidence.folder.seal`` signs
    it and checks the bundle before)."""
    return write_text_atomic(folder.path(SUMS_FILE), sums_text(folder), replace=True)


def read_sums(folder: CampaignFolder) -> dict[str, str]:
    """Path -> sha256 as listed; read with ``SUMS_CAP`` (a file over it, or a link or FIFO in
    its place, is ``Unreadable``)."""
    path = folder.path(SUMS_FILE)
    if not path.is_file() and not path.is_symlink():
        raise FaceoffError(
            f"{SUMS_FILE} is missing",
            where=str(folder.root),
            fix="restore it from a copy of the bundle; a campaign that never closed has none",
        )
    listed = {}
    text = read_text(path, SUMS_CAP)
    for number, line in enumerate(text.splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise FaceoffError(
                f"line {number} is not '<sha256>  <path>' ({shown(line)})",
                where=str(path),
                fix="rebuild the bundle",
            )
        listed[name] = digest
    return listed


def verify_sums(
    folder: CampaignFolder, digest_of: Callable[[Path], str] = file_sha256
) -> list[SumProblem]:
    """Every listed file that changed or vanished, and every file that is not listed.

    ``digest_of``: a file's sha256 (the audit passes one that hashes each file once for
    this check and the receipt's)."""
    listed = read_sums(folder)
    strays = folder.strays()
    problems = [SumProblem(shown(e.name), _stray(e)) for e in strays]
    stray_names = {e.name for e in strays}
    for name, digest in listed.items():
        path = folder.root / name
        if name in stray_names:
            continue  # said above
        if (outside := name_problem(name)) is not None:  # never opened, never hashed
            problems.append(SumProblem(shown(name), f"listed in SHA256SUMS, but {outside}"))
        elif not path.is_file() or path.is_symlink():
            problems.append(SumProblem(name, "listed in SHA256SUMS but missing"))
        elif (actual := digest_of(path)) != digest:
            problems.append(
                SumProblem(name, f"sha256 is {actual[:12]}…, SHA256SUMS says {digest[:12]}…")
            )
    present = {p.relative_to(folder.root).as_posix() for p in folder.files()}
    problems += [
        SumProblem(name, "present but not listed in SHA256SUMS")
        for name in sorted(present - set(listed))
    ]
    return problems


def _stray(entry: Entry) -> str:
    if entry.problem is not None:
        return f"not read: {entry.problem}"
    return f"a {entry.kind}, which a bundle never holds: not followed or read"


def shown(name: str, limit: int = 120) -> str:
    """A name as a finding prints it: a hostile one can be thousands of bytes long."""
    return name if len(name) <= limit else f"{name[:limit]}… ({len(name)} characters)"
