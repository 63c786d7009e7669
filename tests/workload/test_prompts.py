"""Prompt text: determinism, the nonce first, and the conventions lanes rely on."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from pydantic import ValidationError

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase, RequestRole
from matrix.cell import Cell, WorkloadKind
from workload.agentic import opening
from workload.prompts import PromptKey, compose, follow_up
from workload.stream_layout import layout
from workload.text import prose, records, split_at_depth
from workload.traffic.sourced import SOURCED

# What the kinds with a declared shape need besides the common fields.
SHAPES: dict[WorkloadKind, dict[str, Any]] = {
    WorkloadKind.CONTROLLED: {"output_words": 128},
    WorkloadKind.NEEDLE_SEARCH: {
        "concurrency": 1,
        "search": {"low": 500, "high": 2000, "step": 100, "budget": 4},
    },
    WorkloadKind.AGENTIC: {"concurrency": 1, "agentic": {"turns": 2, "tool_result_tokens": 100}},
}


def cell(kind: WorkloadKind = WorkloadKind.NATURAL, **fields: Any) -> Cell:
    base: dict[str, Any] = {"id": "c", "kind": kind, "input_tokens": 2000}
    base |= {"concurrency": 2, "requests": 4} | SHAPES.get(kind, {})
    return Cell(**(base | fields))


# Kinds whose prompts are composed here (a dataset or trace cell sends its file's rows).
SYNTHETIC = [kind for kind in WorkloadKind if kind not in SOURCED]


def key(index: int = 0, phase: Phase = Phase.SCORED, **fields: Any) -> PromptKey:
    base: dict[str, Any] = {"seed": 1, "namespace": "ns", "cell_id": "c"}
    return PromptKey(phase=phase, index=index, **(base | fields))


def user_text(kind: WorkloadKind, role: RequestRole = RequestRole.SINGLE) -> str:
    if kind is WorkloadKind.AGENTIC:  # its own text: a system prompt with a tool, a task
        return opening(key(), 300).messages[-1]["content"]
    return compose(cell(kind), key(), role, 300).messages[-1]["content"]


def test_the_nonce_starts_the_prompt_and_there_is_no_system_prompt() -> None:
    prompt = compose(cell(), key(), RequestRole.SINGLE, 300)
    assert [m["role"] for m in prompt.messages] == ["user"]
    assert prompt.messages[0]["content"].startswith(f"[{prompt.nonce}] ")
    assert re.fullmatch(r"[0-9a-f]{16}", prompt.nonce)
    assert prompt.canary in prompt.messages[0]["content"]


def test_text_is_fixed_by_its_key_and_changes_with_every_part() -> None:
    base = compose(cell(), key(), RequestRole.SINGLE, 300)
    assert compose(cell(), key(), RequestRole.SINGLE, 300) == base
    variants = [
        key(index=1),
        key(phase=Phase.WARMUP),
        key(seed=2),
        key(namespace="other"),
        key(cell_id="d"),
    ]
    nonces = {compose(cell(), k, RequestRole.SINGLE, 300).nonce for k in variants}
    canaries = {compose(cell(), k, RequestRole.SINGLE, 300).canary for k in variants}
    assert len(nonces | {base.nonce}) == 6
    assert len(canaries | {base.canary}) == 6


def test_only_controlled_prompts_carry_a_word_contract() -> None:
    prompt = compose(cell(WorkloadKind.CONTROLLED), key(), RequestRole.SINGLE, 300)
    assert prompt.contract_words == 128
    assert "exactly 128 words" in prompt.messages[-1]["content"]
    for kind in SYNTHETIC:
        if kind is not WorkloadKind.CONTROLLED:
            assert "exactly" not in user_text(kind), kind


def test_only_structured_decode_prompts_look_structured() -> None:
    structured = compose(cell(WorkloadKind.DECODE_STRUCTURED), key(), RequestRole.SINGLE, 300)
    assert structured.text_kind == "structured"
    assert "JSON" in structured.messages[-1]["content"]
    for kind in SYNTHETIC:
        if kind is not WorkloadKind.DECODE_STRUCTURED:
            text = user_text(kind)
            assert "JSON" not in text.upper() and "```" not in text, kind


def test_head_of_line_short_requests_are_prose_even_in_a_structured_cell() -> None:
    prompt = compose(cell(WorkloadKind.DECODE_STRUCTURED), key(), RequestRole.SHORT, 50)
    assert prompt.text_kind == "prose" and "JSON" not in prompt.messages[0]["content"]


@pytest.mark.parametrize("depth", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_needle_marker_line_sits_at_the_requested_depth(depth: float) -> None:
    prompt = compose(cell(WorkloadKind.NEEDLE, needle_depth=depth), key(), RequestRole.SINGLE, 4000)
    text = prompt.messages[0]["content"]
    line = f"The secret marker is: {prompt.marker}"
    assert text.count(line) == 1
    assert re.fullmatch(r"MK-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}", prompt.marker or "")
    document_start = text.index("\n\n") + 2
    document_end = text.index("\n\nRequest canary")
    position = (text.index(line) - document_start) / (document_end - document_start)
    assert position == pytest.approx(depth, abs=0.02)


def test_turn_two_repeats_turn_one_and_adds_a_planned_reply() -> None:
    session = cell(WorkloadKind.SESSION_REUSE)
    first = compose(session, key(0), RequestRole.TURN_1, 500)
    second = follow_up(first, key(1))
    assert second.messages[0] == first.messages[0]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user"]
    assert second.nonce == first.nonce and second.canary != first.canary
    with pytest.raises(ValueError, match="follow_up"):
        compose(session, key(1), RequestRole.TURN_2, 500)


def test_filler_of_n_words_extends_filler_of_fewer_words() -> None:
    short, long = prose(500, "k").split(), prose(800, "k").split()
    assert len(short) == 500 and len(long) == 800
    strip = [w.rstrip(".").lower() for w in long[:499]]
    assert [w.rstrip(".").lower() for w in short[:499]] == strip
    assert len(records(9, "k").splitlines()) == 3


def test_split_at_depth_cuts_at_a_sentence_end() -> None:
    head, tail = split_at_depth("One two. Three four. Five six.", 0.5)
    assert head == "One two. " and tail == "Three four. Five six."
    assert split_at_depth("abc", 0.0) == ("", "abc")
    assert split_at_depth("abc", 1.0) == ("abc", "")


def test_capacity_edge_text_is_generated_in_bulk_quickly() -> None:
    started = time.perf_counter()
    text = prose(130_000, "capacity")  # ≈ 310K tokens on a 3-letter-piece tokenizer
    elapsed = time.perf_counter() - started
    assert len(text.split()) == 130_000
    assert elapsed < 2.0  # a generous bound on a shared 2-core host (≈ 0.1 s typical)


def test_layout_deals_requests_round_robin_after_the_warmups() -> None:
    slots = layout(
        cell(concurrency=3, requests=7, warmups=2),
        scored_phase=Phase.SCORED,
        short_input_tokens=64,
        hol_delay_ms=100,
    )
    warm = [(s.index, s.stream) for s in slots if s.phase is Phase.WARMUP]
    scored = [(s.index, s.stream, s.order) for s in slots if s.phase is Phase.SCORED]
    assert warm == [(0, 0), (1, 1)]
    assert scored == [(0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 0, 1), (4, 1, 1), (5, 2, 1), (6, 0, 2)]


def test_head_of_line_layout_has_a_decoder_before_and_shorts_behind_one_long_prefill() -> None:
    slots = layout(
        cell(WorkloadKind.HEAD_OF_LINE, concurrency=3, requests=5),
        scored_phase=Phase.SCORED,
        short_input_tokens=64,
        hol_delay_ms=100,
    )
    shape = [(s.stream, s.order, s.role, s.start_offset_ms, s.target_tokens) for s in slots]
    assert shape == [
        (0, 0, RequestRole.LONG_PREFILL, 100, 2000),
        (1, 0, RequestRole.SHORT, 0, 64),  # decoding when the long prefill lands
        (2, 0, RequestRole.SHORT, 200, 64),  # queued behind it
        (1, 1, RequestRole.SHORT, 0, 64),  # closed loop: offsets only delay a stream's first
        (2, 1, RequestRole.SHORT, 200, 64),
    ]


def test_session_layout_runs_both_turns_on_one_stream() -> None:
    slots = layout(
        cell(WorkloadKind.SESSION_REUSE, concurrency=2, requests=6),
        scored_phase=Phase.DIAGNOSTIC,
        short_input_tokens=64,
        hol_delay_ms=0,
    )
    shape = [(s.index, s.stream, s.order, s.role.value) for s in slots]
    assert shape == [
        (0, 0, 0, "turn_1"),
        (1, 0, 1, "turn_2"),
        (2, 1, 0, "turn_1"),
        (3, 1, 1, "turn_2"),
        (4, 0, 2, "turn_1"),
        (5, 0, 3, "turn_2"),
    ]
    assert {s.phase for s in slots} == {Phase.DIAGNOSTIC}


@pytest.mark.parametrize(
    ("kind", "fields", "message"),
    [
        (WorkloadKind.HEAD_OF_LINE, {"concurrency": 1}, "head_of_line needs concurrency ≥ 2"),
        (WorkloadKind.SESSION_REUSE, {"requests": 5}, "requests = 5 is odd"),
        (WorkloadKind.SESSION_REUSE, {"concurrency": 3, "requests": 4}, "at least 6 requests"),
    ],
)
def test_cells_whose_layout_cannot_work_are_refused_by_the_spec(
    kind: WorkloadKind, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        cell(kind, **fields)


def test_a_warmup_only_plan_has_no_head_of_line_or_session_shape() -> None:
    for kind in (WorkloadKind.HEAD_OF_LINE, WorkloadKind.SESSION_REUSE):
        slots = layout(
            # as the flow shapes arm warmups: a copy of a valid cell, one stream
            cell(kind).model_copy(update={"concurrency": 1, "requests": 3}),
            scored_phase=Phase.WARMUP,
            short_input_tokens=64,
            hol_delay_ms=100,
        )
        assert [(s.index, s.stream, s.role) for s in slots] == [
            (i, 0, RequestRole.SINGLE) for i in range(3)
        ]
    with pytest.raises(FaceoffError, match="indices collide"):
        layout(cell(warmups=1), scored_phase=Phase.WARMUP, short_input_tokens=1, hol_delay_ms=0)


def test_sessions_after_another_interleave_two_sessions_on_a_stream() -> None:
    base = cell(WorkloadKind.SESSION_REUSE, concurrency=1, requests=6)
    interleaved = base.model_copy(update={"session_order": "after_another"})
    slots = layout(interleaved, scored_phase=Phase.SCORED, short_input_tokens=64, hol_delay_ms=0)
    sent = [s.index for s in sorted(slots, key=lambda s: (s.stream, s.order))]
    # A1 B1 A2 B2, then a last session without a partner back to back
    assert sent == [0, 2, 1, 3, 4, 5]
    plain = layout(base, scored_phase=Phase.SCORED, short_input_tokens=64, hol_delay_ms=0)
    assert [s.index for s in sorted(plain, key=lambda s: s.order)] == [0, 1, 2, 3, 4, 5]
