"""Which stream sends which request, in what order, and when the first is due.

A closed-loop cell runs as C streams that start together; an open-loop cell's
requests keep their round-robin stream numbers, but are sent on their schedule
(``workload.schedule``), every step of a sweep in index order. Requests are dealt to
streams by index, so both arms of a pair send the same requests through the same
stream in the same order. Two kinds shape the layout:

- head_of_line: request 0 is the long cold prefill, alone on stream 0; the other
  requests are short and run on streams 1..C-1. Stream 1 starts at once, so that it
  is decoding when the long prefill lands ``hol_delay_ms`` later (its inter-chunk
  gaps then show the decode stall); the other streams start ``hol_delay_ms`` after
  the long prefill, so that they queue behind it (their TTFT is the head-of-line wait);
- session_reuse: requests come in sessions of two turns; a session's turns run
  back to back on one stream, so turn 2 follows turn 1 and finds its prefix cached;
  with ``session_order = "after_another"`` two sessions of a stream interleave (A1, B1,
  A2, B2), so each turn 2 returns to its session after another session's turn 1;
- agentic: conversations of ``agentic.turns`` requests, one after another on stream 0
  (C1), each turn's role naming its turn (turn_1 … turn_8);
- needle_search: no request is planned; the client decides each probe's length from
  the answer before it (``workload.needle_search``).
"""

from __future__ import annotations

from dataclasses import dataclass

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase, RequestRole, turn_role
from matrix.cell import Cell, WorkloadKind


@dataclass(frozen=True)
class Slot:
    phase: Phase
    index: int
    stream: int
    order: int  # position within its stream
    start_offset_ms: int  # first of a stream: due this long after the aligned start
    role: RequestRole
    target_tokens: int


def layout(
    cell: Cell, *, scored_phase: Phase, short_input_tokens: int, hol_delay_ms: int
) -> list[Slot]:
    """Warmups first (their own aligned start), then the scored or diagnostic requests.

    A plan whose main phase is itself ``warmup`` (an arm's warmups shaped like a cell)
    has no head-of-line or session pattern: warmups are independent requests.
    """
    if scored_phase is Phase.WARMUP:
        if cell.warmups:
            raise FaceoffError(
                "a warmup-only plan cannot also hold the cell's warmups (their indices collide)",
                where=f"cell {cell.id}",
                fix="set warmups = 0 on the cell shape used for arm warmups",
            )
        return _round_robin(cell, scored_phase, cell.requests, cell.concurrency)
    warmups = _round_robin(cell, Phase.WARMUP, cell.warmups, min(cell.concurrency, cell.warmups))
    if cell.kind is WorkloadKind.HEAD_OF_LINE:
        return warmups + _head_of_line(cell, scored_phase, short_input_tokens, hol_delay_ms)
    if cell.kind is WorkloadKind.SESSION_REUSE:
        return warmups + _sessions(cell, scored_phase)
    if cell.kind is WorkloadKind.AGENTIC:
        return warmups + _conversations(cell, scored_phase)
    if cell.kind is WorkloadKind.NEEDLE_SEARCH:
        return warmups
    return warmups + _round_robin(cell, scored_phase, cell.scored_requests, cell.concurrency)


def _round_robin(cell: Cell, phase: Phase, count: int, streams: int) -> list[Slot]:
    return [
        Slot(phase, i, i % streams, i // streams, 0, RequestRole.SINGLE, cell.input_tokens)
        for i in range(count)
    ]


def _head_of_line(cell: Cell, phase: Phase, short_tokens: int, delay_ms: int) -> list[Slot]:
    # matrix.Cell guarantees concurrency ≥ 2 and requests ≥ concurrency for this kind.
    shorts = cell.concurrency - 1
    long = Slot(phase, 0, 0, 0, delay_ms, RequestRole.LONG_PREFILL, cell.input_tokens)
    return [long] + [
        Slot(
            phase,
            i,
            stream := 1 + (i - 1) % shorts,
            (i - 1) // shorts,
            0 if stream == 1 else 2 * delay_ms,  # stream 1 decodes when the long one lands
            RequestRole.SHORT,
            short_tokens,
        )
        for i in range(1, cell.requests)
    ]


def _sessions(cell: Cell, phase: Phase) -> list[Slot]:
    # matrix.Cell guarantees an even request count of at least two per stream.
    sessions = cell.requests // 2
    slots = []
    for i in range(cell.requests):
        session, turn = divmod(i, 2)
        role = RequestRole.TURN_2 if turn else RequestRole.TURN_1
        stream, round_ = session % cell.concurrency, session // cell.concurrency
        order = 2 * round_ + turn
        partner = session + cell.concurrency if round_ % 2 == 0 else session - cell.concurrency
        if cell.session_order == "after_another" and partner < sessions:
            # rounds pair up on a stream: A1, B1, A2, B2 (a last unpaired round stays as is)
            order = 4 * (round_ // 2) + 2 * turn + round_ % 2
        slots.append(Slot(phase, i, stream, order, 0, role, cell.input_tokens))
    return slots


def _conversations(cell: Cell, phase: Phase) -> list[Slot]:
    # matrix.Cell guarantees C1 and whole conversations for this kind.
    turns = cell.agentic.turns if cell.agentic else 1
    return [
        Slot(phase, i, 0, i, 0, turn_role(i % turns + 1), cell.input_tokens)
        for i in range(cell.requests)
    ]
