"""The paired table ``faceoff run --diagnose`` prints: a row per arm, times against the
incumbent's. A renderer of ``Diagnostic`` records (``evidence/attempt/diagnostics.py``): it
computes nothing but each candidate time's ratio to the incumbent's.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.attempt.diagnostics import NOT_RUN
from faceoff.formats.diagnostic import DIAGNOSTICS_DIR, Diagnostic

HEADERS = ("arm", "run", "status", "in tok", "out tok", "TTFT ms", "E2E ms", "TPOT ms", "chunks",
           "max gap ms", "prefix hits", "effort")  # fmt: skip
TIMES = ("ttft_s", "e2e_s", "tpot_s")


def paired_lines(cell_id: str, diagnostics: Sequence[Diagnostic], incumbent: str) -> list[str]:
    """A title, the table (incumbent first), what the prompt vectors say, and where the files
    are."""
    reference = next((d for d in diagnostics if d.arm == incumbent), None)
    ordered = sorted(diagnostics, key=lambda d: d.arm != incumbent)
    rows = [HEADERS, *(_row(d, reference) for d in ordered)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    table = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]  # fmt: skip
    return [
        f"diagnostic of {cell_id}: one request per arm (phase diagnostic, journaled, never scored)",
        *table,
        *_notes(ordered),
        f"files: {DIAGNOSTICS_DIR}/{cell_id}/<arm>/run-<n>/ in the bundle",
    ]


def _row(d: Diagnostic, reference: Diagnostic | None) -> tuple[str, ...]:
    hits = d.engine_deltas.get("prefix_cache_hits")
    return (
        d.arm,
        str(d.run),
        d.status,
        _count(d.input_tokens),
        _count(d.output_tokens),
        *(_time(d, reference, field) for field in TIMES),
        str(len(d.chunk_offsets_ms)),
        "—" if d.max_gap_ms is None else f"{d.max_gap_ms:.1f}",
        _count(None if hits is None else int(hits)),
        d.reasoning_effort or "—",
    )


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _time(d: Diagnostic, reference: Diagnostic | None, field: str) -> str:
    value = getattr(d, field)
    if value is None:
        return "—"
    shown = f"{value * 1000:.1f}"
    base = None if reference is None or reference is d else getattr(reference, field)
    return f"{shown} ({value / base:.2f}×)" if base else shown


def _said(status: str) -> str:
    return "not run" if status == NOT_RUN else status


def _notes(diagnostics: Sequence[Diagnostic]) -> list[str]:
    notes = [f"{d.arm}: {_said(d.status)}: {d.error}" for d in diagnostics if d.error]
    notes += [
        f"{d.arm}: warmups failed: {d.seen.warmups_failed}"
        for d in diagnostics
        if d.seen.warmups_failed
    ]
    vectors = {d.prompt_sha256 for d in diagnostics if d.prompt_sha256 is not None}
    if len(vectors) == 1 and len(diagnostics) > 1:
        notes.append("prompt-token vectors: equal on every arm (the same tokens prefilled)")
    elif len(vectors) > 1:
        efforts = {d.reasoning_effort for d in diagnostics}
        why = " (the arms' reasoning efforts differ by design)" if len(efforts) > 1 else ""
        notes.append(f"prompt-token vectors: differ between arms{why}")
    return notes
