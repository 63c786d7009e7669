"""``SHA256SUMS``: every file of the bundle, in the format ``sha256sum -c`` verifies.

One line per file, ``<64 hex>  <path relative to the bundle>``, sorted by path.
Names that coreutils would have to escape (a newline or a backslash) are refused
instead, so that the file stays readable by both tools. With the operator's
signing key, ``SHA256SUMS.hmac`` holds the HMAC-SHA256 of the sums' sha256: a file
edited together with its hash line no longer passes an audit given the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evidence.folder.layout import SEAL_FILE, SUMS_FILE, CampaignFolder
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.signing import sign, signature_problem

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


def write_sums(folder: CampaignFolder, key: bytes | None = None) -> Path:
    """(Re)write SHA256SUMS over every file now in the bundle, and sign it under ``key``.

    Without a key an earlier signature is removed: it would no longer match.
    """
    path = write_text_atomic(folder.path(SUMS_FILE), sums_text(folder), replace=True)
    seal = folder.path(SEAL_FILE)
    if key is None:
        seal.unlink(missing_ok=True)
    else:
        write_text_atomic(seal, sign(key, file_sha256(path)) + "\n", replace=True)
    return path


def seal_problem(folder: CampaignFolder, key: bytes) -> str | None:
    """Why ``SHA256SUMS.hmac`` does not prove the sums under ``key``; None when it does."""
    seal, sums = folder.path(SEAL_FILE), folder.path(SUMS_FILE)
    if not sums.is_file():
        return None  # the missing sums are a finding of their own
    signature = seal.read_text(encoding="utf-8").strip() if seal.is_file() else None
    return signature_problem(key, file_sha256(sums), signature)


def require_intact(
    folder: CampaignFolder, *, sealed: bool = False, key: bytes | None = None
) -> None:
    """Refuse to go on when the bundle no longer matches its ``SHA256SUMS``.

    Run before anything rewrites the sums, so that a changed file is never
    hashed into them (laundered). Without ``SHA256SUMS`` there is nothing to
    check yet, unless ``sealed`` says there must be one. Given the operator's
    ``key``, a signature of the sums must match it too.
    """
    if not folder.path(SUMS_FILE).is_file() and not sealed:
        return
    problems = verify_sums(folder)
    if key is not None and folder.path(SEAL_FILE).is_file():
        problem = seal_problem(folder, key)
        problems += [SumProblem(SEAL_FILE, problem)] if problem else []
    if problems:
        shown = "; ".join(f"{p.path} ({p.what})" for p in problems[:SHOWN])
        more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise FaceoffError(
            f"the bundle no longer matches its {SUMS_FILE}, so it is not rewritten: {shown}{more}",
            where=str(folder.root),
            fix="restore those files from a copy of the bundle (faceoff audit lists every "
            "finding); nothing was written",
        )


def read_sums(folder: CampaignFolder) -> dict[str, str]:
    path = folder.path(SUMS_FILE)
    if not path.is_file():
        raise FaceoffError(
            f"{SUMS_FILE} is missing",
            where=str(folder.root),
            fix="restore it from a copy of the bundle; a campaign that never closed has none",
        )
    listed = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise FaceoffError(
                f"line {number} is not '<sha256>  <path>'",
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
    problems = []
    for name, digest in listed.items():
        path = folder.root / name
        if not path.is_file():
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
