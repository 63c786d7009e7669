"""Atomic writes and append-only JSON lines."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel

from faceoff.canonical import canonical_json, content_sha256, file_sha256
from faceoff.digests import FileDigests
from faceoff.errors import FaceoffError
from faceoff.files import JsonlAppender, JsonlScan, read_jsonl, write_text_atomic


def test_atomic_write_refuses_to_overwrite(tmp_path: Path) -> None:
    path = write_text_atomic(tmp_path / "a" / "x.json", "1")
    with pytest.raises(FaceoffError, match="refusing to overwrite"):
        write_text_atomic(path, "2")
    write_text_atomic(path, "2", replace=True)
    assert path.read_text() == "2"
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


class Line(BaseModel):
    i: int


def test_jsonl_reader_reports_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with JsonlAppender(path) as out:
        out.append(Line(i=1))
        out.append(Line(i=2))
    with path.open("a") as handle:
        handle.write('{"i": 3, "tor')
    contents = read_jsonl(path)
    assert [r["i"] for r in contents.records] == [1, 2]
    assert contents.torn_tail == '{"i": 3, "tor'
    assert contents.bad_lines == []


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"b": 1, "a": [0.1, 2]}) == '{"a":[0.1,2],"b":1}'
    assert content_sha256({"a": 1, "b": 2}) == content_sha256({"b": 2, "a": 1})
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"x": float("nan")})
    assert json.loads(canonical_json({"k": "é"})) == {"k": "é"}


def test_atomic_files_are_readable_by_reviewers(tmp_path: Path) -> None:
    path = write_text_atomic(tmp_path / "card.md", "# card\n")
    assert path.stat().st_mode & 0o777 == 0o644


def test_file_hash_matches_coreutils_across_read_chunks(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)) * 20_000)  # several read chunks
    done = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True)
    assert file_sha256(path) == done.stdout.split()[0]


def test_jsonl_scan_streams_the_lines_text_mode_reads(tmp_path: Path) -> None:
    """Line by line, as read_jsonl reads them: \\n, \\r\\n and \\r end a line; blank lines
    are skipped but counted; a corrupt line is named by number; the torn tail is kept."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"i": 1}\r\n\n{"i": 2}\r{"i": 3}\nnot json\n{"i": "\xc3\xa9"}\n{"i": 4')
    scan = JsonlScan(path)
    assert list(scan) == [{"i": 1}, {"i": 2}, {"i": 3}, {"i": "é"}]
    assert scan.bad_lines == [5] and scan.torn_tail == '{"i": 4'
    whole = read_jsonl(path)
    assert (whole.records, whole.bad_lines, whole.torn_tail) == (list(scan), [5], '{"i": 4')
    assert list(JsonlScan(tmp_path / "absent.jsonl")) == []


def test_file_digests_hash_each_file_once_in_threads_and_leave_a_vanished_one_to_the_caller(
    tmp_path: Path,
) -> None:
    paths = []
    for n in range(6):
        path = tmp_path / f"f{n}.bin"
        path.write_bytes(bytes([n]) * (n * 300_000 + 1))
        paths.append(path)
    digests = FileDigests()
    digests.prefetch([*paths, tmp_path / "gone.bin"], threads=3)
    for path in paths:
        path.write_bytes(b"changed after the prefetch")  # the digest read is the prefetched one
    done = subprocess.run(["sha256sum", *map(str, paths)], capture_output=True, text=True)
    assert [digests(p) for p in paths] != [line.split()[0] for line in done.stdout.splitlines()]
    for n, path in enumerate(paths):
        assert digests(path) == hashlib.sha256(bytes([n]) * (n * 300_000 + 1)).hexdigest()
    with pytest.raises(FileNotFoundError):
        digests(tmp_path / "gone.bin")
