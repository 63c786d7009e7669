"""Hostile bundles for the tamper bench: not forgeries of content but traps for the reader,
each planted in a copy of the signed bundle and audited with ``faceoff audit --trust``.

A FIFO where a record should be (``receipt.json``, ``MANIFEST.json``, ``reviews.jsonl``, a
journal), JSON nested 5,000 deep in the receipt or a review line, a 5,000-byte name and a
200 MB line in ``SHA256SUMS`` (sparse), 1,500 nested folders, and the content a seal must
cover (an empty folder, a run lock with text, an HMAC seal beside the envelope). Per class:
the audit's exit status, its worst wall time and peak memory over ``RUNS`` runs, whether it
hung (killed at ``HANG_S``) or printed a traceback. ``tests/faceoff/test_bounded.py``
keeps each class as a test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evidence.folder.layout import RUN_LOCK, SEAL_FILE, SUMS_FILE
from faceoff.exits import Exit
from faceoff.formats.bundle.manifest import MANIFEST_FILE
from faceoff.formats.bundle.reviews import REVIEWS_FILE
from faceoff.formats.receipt import RECEIPT_FILE

RUNS = 3
HANG_S = 60.0
DEEP = "[" * 5_000 + "]" * 5_000


def fifo_at(name: str) -> Callable[[Path], None]:
    def plant(root: Path) -> None:
        (root / name).unlink(missing_ok=True)
        os.mkfifo(root / name)

    return plant


def deep_receipt(root: Path) -> None:
    (root / RECEIPT_FILE).write_text('{"signature": ' + DEEP + "}", encoding="utf-8")


def deep_review(root: Path) -> None:
    with (root / REVIEWS_FILE).open("a", encoding="utf-8") as handle:
        handle.write('{"signature": ' + DEEP + "}\n")


def long_sums_name(root: Path) -> None:
    with (root / SUMS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(f"{'0' * 64}  {'n' * 5_000}\n")


def nested_folders(root: Path) -> None:
    """Made a folder at a time from the one above (by descriptor): no path that long works."""
    fd = os.open(root, os.O_RDONLY)
    for _ in range(1_500):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def unnest(root: Path) -> None:
    """Remove what ``nested_folders`` made, deepest first, by descriptor (``shutil.rmtree``
    would recurse, and no path that long works)."""
    chain = [os.open(root, os.O_RDONLY)]
    while True:
        try:
            chain.append(os.open("d", os.O_RDONLY, dir_fd=chain[-1]))
        except FileNotFoundError:
            break
    for parent in reversed(chain[:-1]):
        os.rmdir("d", dir_fd=parent)
    for fd in chain:
        os.close(fd)


def huge_sums_line(root: Path) -> None:
    """A 200 MB line, sparse: the cap is seen by its size, before a byte of it is read."""
    with (root / SUMS_FILE).open("r+b") as handle:
        handle.truncate(200 * 1024 * 1024)


def empty_folder(root: Path) -> None:
    (root / "APPROVED-promote-by-CTO").mkdir()


def lock_text(root: Path) -> None:
    (root / RUN_LOCK).write_text("promote approved by the CTO\n", encoding="utf-8")


def hmac_beside(root: Path) -> None:
    (root / SEAL_FILE).write_text("0" * 64 + "\n", encoding="utf-8")


def fifo_journal(root: Path) -> None:
    """A FIFO at the first cell run's journal, which the verdict's recompute reads."""
    journal = min(root.glob("cells/*/*/attempt-*/journal.jsonl"))
    fifo_at(journal.relative_to(root).as_posix())(root)


Plant = tuple[Callable[[Path], None], str]  # the trap, and what a finding must name
READER_CLASSES: dict[str, Plant] = {  # traps for the reader: any bundle, signed or not
    "fifo-receipt": (fifo_at(RECEIPT_FILE), RECEIPT_FILE),
    "fifo-manifest": (fifo_at(MANIFEST_FILE), MANIFEST_FILE),
    "fifo-reviews": (fifo_at(REVIEWS_FILE), REVIEWS_FILE),
    "fifo-journal": (fifo_journal, "journal.jsonl"),
    "deep-receipt": (deep_receipt, RECEIPT_FILE),
    "deep-review": (deep_review, REVIEWS_FILE),
    "long-sums-name": (long_sums_name, "n" * 100),
    "nested-folders": (nested_folders, "d/d/d"),
    "huge-sums-line": (huge_sums_line, SUMS_FILE),
}
SEAL_CLASSES: dict[str, Plant] = {  # content beside the files: found by a key's seal
    "empty-folder": (empty_folder, "APPROVED-promote-by-CTO/"),
    "lock-text": (lock_text, RUN_LOCK),
    "hmac-beside-envelope": (hmac_beside, SEAL_FILE),
}
CLASSES = READER_CLASSES | SEAL_CLASSES


@dataclass(frozen=True)
class Run:
    exit: int | None  # None: killed as hung
    seconds: float
    max_rss_mib: float
    traceback: bool
    named: bool  # the finding names the planted file


def audit_run(bundle: Path, public_key: Path, named: str, env: dict[str, str]) -> Run:
    """One ``faceoff audit --trust``, its wall time and peak memory (``wait4``'s rusage of
    that child alone), killed as hung after ``HANG_S``."""
    argv = [sys.executable, "-m", "flows", "audit", str(bundle), "--trust", str(public_key)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        while (done := os.wait4(child.pid, os.WNOHANG))[0] == 0:
            if time.monotonic() - start > HANG_S:
                child.kill()
                os.wait4(child.pid, 0)
                child.returncode = -9
                return Run(None, HANG_S, 0.0, traceback=False, named=False)
            time.sleep(0.02)  # polling a child's exit: wait4 has no timeout
        seconds = time.monotonic() - start
        child.returncode = code = os.waitstatus_to_exitcode(done[1])
        out.seek(0)
        err.seek(0)
        said, errors = out.read(), err.read()
    return Run(code, seconds, done[2].ru_maxrss / 1024, "Traceback" in errors, named in said)


@dataclass(frozen=True)
class HostileRow:
    name: str
    runs: list[Run]

    @property
    def ok(self) -> bool:
        return all(r.exit == Exit.FINDINGS and not r.traceback and r.named for r in self.runs)


def hostile_rows(
    bundle: Path, public_key: Path, work: Path, env: dict[str, str]
) -> list[HostileRow]:
    """Each class planted in a fresh copy of ``bundle``, audited ``RUNS`` times."""
    rows = []
    for name, (plant, named) in CLASSES.items():
        copy = work / name / bundle.name
        shutil.rmtree(copy.parent, ignore_errors=True)
        shutil.copytree(bundle, copy, symlinks=True)
        plant(copy)
        try:
            rows.append(HostileRow(name, [audit_run(copy, public_key, named, env)
                                          for _ in range(RUNS)]))  # fmt: skip
        finally:
            unnest(copy)
            shutil.rmtree(copy.parent, ignore_errors=True)
        print(hostile_table(rows[-1:]).splitlines()[-1], flush=True)
    return rows


def hostile_table(rows: list[HostileRow]) -> str:
    header = ["hostile class", "exit", "worst s", "peak MiB", "hangs", "tracebacks", "row"]
    cells = [[r.name, ",".join(sorted({str(x.exit) for x in r.runs})),
              f"{max(x.seconds for x in r.runs):.1f}", f"{max(x.max_rss_mib for x in r.runs):.0f}",
              str(sum(x.exit is None for x in r.runs)), str(sum(x.traceback for x in r.runs)),
              "ok" if r.ok else "CHECK"] for r in rows]  # fmt: skip
    widths = [max(len(x) for x in column) for column in zip(header, *cells, strict=True)]
    lines = [" | ".join(x.ljust(w) for x, w in zip(line, widths, strict=True))
             for line in [header, *cells]]  # fmt: skip
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def hostile_totals(rows: list[HostileRow]) -> str:
    runs = [x for r in rows for x in r.runs]
    hangs, tracebacks = sum(x.exit is None for x in runs), sum(x.traceback for x in runs)
    worst = max(runs, key=lambda x: x.seconds)
    peak = max(x.max_rss_mib for x in runs)
    return (f"hostile classes: {len(rows)} × {RUNS} audits; {hangs} hangs, {tracebacks} "
            f"tracebacks; {sum(r.ok for r in rows)} of {len(rows)} found (exit 5, named); "
            f"worst {worst.seconds:.1f} s, peak {peak:.0f} MiB")  # fmt: skip
