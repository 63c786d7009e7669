"""A dataset's or a trace's file: its bytes pinned by sha256, its rows or records parsed.

Formats (docs/workload.md, "Bring your own traffic"):

- ``sharegpt``: a JSON array of ``{"conversations": [{"from": "human"|"gpt"|"system",
  "value": ...}]}``;
- ``openai``: JSON lines of ``{"messages": [{"role": "system"|"user"|"assistant",
  "content": ...}]}`` (content a string or a list of text parts);
- ``prompts``: JSON lines of ``{"prompt": ...}``;
- ``mooncake``: JSON lines of ``{"timestamp": ms, "input_length", "output_length",
  "hash_ids": [...]}``;
- ``azure``: CSV with the columns ``TIMESTAMP`` (``2023-11-16 18:15:46.6805900``),
  ``ContextTokens``, ``GeneratedTokens``.

A conversation that ends with an assistant turn has that turn as its reference answer (its
length is the row's output length) and the turns before it as the prompt. Any dataset line
may give ``output_tokens``, which wins. Rows without a user turn are left out (their
positions are skipped, so a row keeps its position in the file). Every other defect is an
error naming the file and the line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from faceoff.errors import FaceoffError

ROLES = {
    "system": "system", "developer": "system", "human": "user", "user": "user",
    "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "bard": "assistant",
    "bing": "assistant", "model": "assistant",
}  # fmt: skip
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


@dataclass(frozen=True)
class ParsedRow:
    position: int  # the row's index in the file (line or array element), from 0
    messages: tuple[tuple[str, str], ...]  # (role, content): the prompt
    answer: str | None  # the reference answer, when the conversation ends with one
    output_tokens: int | None  # given by the row


@dataclass(frozen=True)
class ParsedRecord:
    position: int  # the record's index in the file, from 0
    at_ms: float  # recorded time, ms after the first record
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] | None  # Mooncake's block ids; None: no block is shared


def pinned_bytes(path: Path, sha256: str, *, where: str) -> bytes:
    """The file's bytes, refused unless they hash to the sha256 the matrix froze."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FaceoffError(
            f"cannot read the source file {path}: {exc.strerror or exc}",
            where=where,
            fix="put the file back where the matrix names it (nothing is downloaded at run time)",
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise FaceoffError(
            f"{path} hashes to {actual}, but the matrix froze it as {sha256}",
            where=where,
            fix="restore the file the campaign was frozen with, or start a new campaign "
            "(rename it) over the new file",
        )
    return data


def dataset_rows(data: bytes, fmt: str, *, where: str) -> list[ParsedRow]:
    """The usable rows of a dataset file, in file order."""
    items = _json_array(data, where) if fmt == "sharegpt" else _json_lines(data, where)
    rows = []
    for position, item in items:
        line = f"{where}: row {position}"
        turns = _turns(item, fmt, line)
        row = _row(position, turns, _given_output(item, line))
        if row is not None:
            rows.append(row)
    if not rows:
        raise FaceoffError(
            f"no usable row in the {fmt} file (a row needs a user turn)",
            where=where,
            fix=f"check that the file is in the {fmt} format (docs/workload.md)",
        )
    return rows


def trace_records(data: bytes, fmt: str, *, where: str) -> list[ParsedRecord]:
    """The records of a trace file, in file order, times from the first record's."""
    raw = _azure(data, where) if fmt == "azure" else _mooncake(data, where)
    if not raw:
        raise FaceoffError("the trace has no record", where=where, fix="check the file")
    origin = min(at for _, at, _, _, _ in raw)
    return [
        ParsedRecord(position, at - origin, inputs, outputs, ids)
        for position, at, inputs, outputs, ids in raw
    ]


def _json_array(data: bytes, where: str) -> list[tuple[int, Any]]:
    try:
        items = json.loads(data)
    except ValueError as exc:
        raise FaceoffError(
            f"not JSON: {exc}", where=where, fix="a sharegpt file is one JSON array"
        ) from exc
    if not isinstance(items, list):
        raise FaceoffError(
            "a sharegpt file is a JSON array of conversations", where=where, fix="check the format"
        )
    return list(enumerate(items))


def _json_lines(data: bytes, where: str) -> list[tuple[int, Any]]:
    items = []
    for number, line in enumerate(data.decode("utf-8-sig").splitlines()):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except ValueError as exc:
            raise FaceoffError(
                f"line {number + 1} is not JSON: {exc}", where=where, fix="one JSON object a line"
            ) from exc
    return items


def _turns(item: Any, fmt: str, where: str) -> list[tuple[str, str]]:
    if not isinstance(item, dict):
        raise FaceoffError("a row must be a JSON object", where=where, fix="check the format")
    if fmt == "prompts":
        return [("user", _text(item.get("prompt"), where))]
    key, role_key, text_key = (
        ("conversations", "from", "value") if fmt == "sharegpt" else ("messages", "role", "content")
    )
    turns = item.get(key)
    if not isinstance(turns, list):
        raise FaceoffError(f"the row has no {key} list", where=where, fix="check the format")
    return [_turn(turn, role_key, text_key, f"{where} turn {i}") for i, turn in enumerate(turns)]


def _turn(turn: Any, role_key: str, text_key: str, where: str) -> tuple[str, str]:
    role = ROLES.get(str(turn.get(role_key)).lower()) if isinstance(turn, dict) else None
    if role is None:
        raise FaceoffError(
            f"unknown role {turn.get(role_key) if isinstance(turn, dict) else turn!r}",
            where=where,
            fix=f"roles: {', '.join(sorted(ROLES))}",
        )
    return role, _text(turn.get(text_key), where)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" for p in content
    ):
        return "".join(str(p.get("text", "")) for p in content)
    raise FaceoffError(
        f"text must be a string or a list of text parts, got {type(content).__name__}",
        where=where,
        fix="images and audio cannot be replayed; keep text rows only",
    )


def _given_output(item: dict[str, Any], where: str) -> int | None:
    value = item.get("output_tokens")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FaceoffError(
            f"output_tokens must be a whole number ≥ 1, got {value!r}",
            where=where,
            fix="fix or drop it",
        )
    return value


def _row(position: int, turns: list[tuple[str, str]], given: int | None) -> ParsedRow | None:
    answer = None
    if len(turns) > 1 and turns[-1][0] == "assistant":
        answer = turns[-1][1]
        turns = turns[:-1]
    if not any(role == "user" for role, _ in turns):
        return None
    return ParsedRow(position, tuple(turns), answer, given)


Raw = tuple[int, float, int, int, tuple[int, ...] | None]


def _mooncake(data: bytes, where: str) -> list[Raw]:
    records: list[Raw] = []
    for number, item in _json_lines(data, where):
        line = f"{where}: line {number + 1}"
        if not isinstance(item, dict):
            raise FaceoffError("a record must be a JSON object", where=line, fix="check the file")
        ids = item.get("hash_ids", [])
        if not isinstance(ids, list) or not all(_whole(i, 0) for i in ids):
            raise FaceoffError("hash_ids must be a list of whole numbers", where=line, fix="fix it")
        at = _number(item.get("timestamp"), "timestamp", line)
        inputs, outputs = (_count(item.get(k), k, line) for k in ("input_length", "output_length"))
        records.append((number, at, inputs, outputs, tuple(ids)))
    return records


def _azure(data: bytes, where: str) -> list[Raw]:
    reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
    missing = [c for c in AZURE_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise FaceoffError(
            f"the CSV lacks the column(s) {', '.join(missing)}",
            where=where,
            fix=f"an Azure LLM inference trace has {', '.join(AZURE_COLUMNS)}",
        )
    records: list[Raw] = []
    for number, row in enumerate(reader):
        line = f"{where}: data row {number + 1}"
        at = _azure_time(row["TIMESTAMP"], line)
        inputs = _count(_int(row["ContextTokens"], line), "ContextTokens", line)
        outputs = _count(_int(row["GeneratedTokens"], line), "GeneratedTokens", line)
        records.append((number, at, inputs, outputs, None))
    return records


def _azure_time(text: str, where: str) -> float:
    """ms since the epoch of ``2023-11-16 18:15:46.6805900`` (seven fraction digits: cut to 6)."""
    head, _, fraction = text.strip().partition(".")
    try:
        stamp = datetime.fromisoformat(f"{head}.{(fraction or '0')[:6].ljust(6, '0')}")
    except ValueError as exc:
        raise FaceoffError(
            f"TIMESTAMP {text!r} is not a date and time", where=where, fix="YYYY-MM-DD HH:MM:SS.f"
        ) from exc
    return stamp.timestamp() * 1000.0


def _int(text: str | None, where: str) -> int | None:
    try:
        return int(str(text).strip())
    except ValueError:
        raise FaceoffError(
            f"{text!r} is not a whole number", where=where, fix="fix the row"
        ) from None


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _count(value: Any, name: str, where: str) -> int:
    if not _whole(value, 1):
        raise FaceoffError(
            f"{name} must be a whole number ≥ 1, got {value!r}", where=where, fix="fix the record"
        )
    return int(value)


def _number(value: Any, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FaceoffError(f"{name} must be a number, got {value!r}", where=where, fix="fix it")
    return float(value)
