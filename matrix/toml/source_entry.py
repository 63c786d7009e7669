"""Reading a cell entry's source file while the matrix loads: path, sha256, trace defaults.

A ``[cells.dataset]`` or ``[cells.trace]`` table names its file relative to the matrix
file's folder; the loader resolves it, takes its sha256 (or checks the one pinned in the
TOML) and freezes both. A trace entry that leaves them out gets ``requests`` (every
record), ``input_tokens`` (the longest input among the records replayed) and ``arrival =
"trace"`` from its records, before ``[defaults]`` (which hold other cells' values) and
before the id is made from them; its recorded span, time-scaled, must fit its deadline. A
dataset file is read as its declared format.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from matrix.sources import ParsedRecord, dataset_rows, pinned_bytes, trace_records
from matrix.traffic import Dataset

SOURCES = ("dataset", "trace")
FORMATS = typing.get_args(Dataset.model_fields["format"].annotation)
DEFAULT_DEADLINE_S = 1200.0  # matrix.cell.Cell.deadline_s's default


def source_entry(entry: dict[str, Any], base: Path | None, label: str) -> dict[str, Any]:
    """The entry with its source file resolved and hashed, and a trace's defaults filled."""
    for name in SOURCES:
        table = entry.get(name)
        if isinstance(table, dict) and isinstance(table.get("file"), str):
            entry = {**entry, name: _pinned(table, base, f"{label}.{name}")}
    trace = entry.get("trace")
    if entry.get("kind") == "trace" and isinstance(trace, dict) and "sha256" in trace:
        entry = _trace_defaults(entry, trace, f"{label}.trace")
    dataset = entry.get("dataset")
    if isinstance(dataset, dict) and "sha256" in dataset and dataset.get("format") in FORMATS:
        _rows(dataset, f"{label}.dataset")
    return entry


def _pinned(table: dict[str, Any], base: Path | None, label: str) -> dict[str, Any]:
    path = Path(table["file"]).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    path = path.resolve()
    if not path.is_file():
        raise ValueError(
            f"{label}.file: {path} is not a file; give the path of the file (relative to the "
            "matrix file's folder), nothing is downloaded"
        )
    actual = file_sha256(path)
    pinned = table.get("sha256")
    if pinned is not None and pinned != actual:
        raise ValueError(
            f"{label}.sha256: {path} hashes to {actual}, not the pinned {pinned}; restore the "
            "file or pin the new hash"
        )
    return {**table, "file": str(path), "sha256": actual}


def fidelity_entries(entries: Any, base: Path | None) -> Any:
    """``[[fidelity]]`` entries with each corpus file resolved and hashed (or checked)."""
    if not isinstance(entries, list):
        return entries  # the model's error names the field
    out = []
    for index, entry in enumerate(entries):
        corpus = entry.get("corpus") if isinstance(entry, dict) else None
        if isinstance(corpus, dict) and isinstance(corpus.get("file"), str):
            out.append({**entry, "corpus": _pinned(corpus, base, f"fidelity[{index}].corpus")})
        else:
            out.append(entry)
    return out


def _trace_defaults(entry: dict[str, Any], trace: dict[str, Any], label: str) -> dict[str, Any]:
    records = _records(trace, label)
    count = entry.get("requests", len(records))
    if isinstance(count, int) and count > len(records):
        raise ValueError(
            f"{label}: requests = {count} but the trace has {len(records)} records; give at "
            "most that many (the first N records are replayed)"
        )
    replayed = records[:count] if isinstance(count, int) and count > 0 else records
    scale = trace.get("time_scale", 1.0)
    span_s = (replayed[-1].at_ms - replayed[0].at_ms) / 1000.0 if replayed else 0.0
    if isinstance(scale, int | float) and scale > 0:
        _fits_deadline(span_s / scale, entry.get("deadline_s", DEFAULT_DEADLINE_S), label)
    filled = {
        "requests": len(records),
        "input_tokens": max(r.input_length for r in replayed),
        "arrival": "trace",
    }
    return {**filled, **entry}


def _records(trace: dict[str, Any], label: str) -> list[ParsedRecord]:
    try:
        data = pinned_bytes(Path(trace["file"]), trace["sha256"], where=label)
        return trace_records(data, str(trace.get("format")), where=trace["file"])
    except FaceoffError as exc:
        raise ValueError(f"{label}: {exc.message}") from exc


def _rows(dataset: dict[str, Any], label: str) -> None:
    """A dataset file read as its declared format, so a file in another one is refused now
    rather than at its cell's turn, after the take-over."""
    fmt = dataset["format"]
    try:
        data = pinned_bytes(Path(dataset["file"]), dataset["sha256"], where=label)
        dataset_rows(data, fmt, where=dataset["file"])
    except FaceoffError as exc:
        raise ValueError(
            f"{label}.format: the file is not {fmt!r} as format declares ({exc.message}); "
            "declare the format the file is in (sharegpt, openai or prompts) or convert it"
        ) from exc


def _fits_deadline(span_s: float, deadline_s: Any, label: str) -> None:
    if isinstance(deadline_s, int | float) and span_s >= deadline_s:
        raise ValueError(
            f"{label}: the replayed records span {span_s:.0f} s (time-scaled), beyond "
            f"deadline_s = {deadline_s:g}; raise deadline_s or trace.time_scale, or replay fewer "
            "requests"
        )
