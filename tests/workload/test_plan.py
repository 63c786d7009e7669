"""Request plans: token targets hit on a real tokenizer, hashes, pairs, and the artifact."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from faceoff.canonical import sha256_hex
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase, RequestRole
from faceoff.formats.attempt.request_plan import PlanOptions, RequestPlan
from matrix.cell import Cell, Sampling, WorkloadKind
from simulator.tokenizer import Tokenizer as SimTokenizer
from simulator.tokenizer import render_chat
from workload.fit import precision
from workload.plan import RETOKENIZE_IN_FLIGHT, build_plan, retokenize
from workload.request import Body, chat_template_kwargs
from workload.tokenizer import TokenCount, vector_sha256


class InProcessTokenizer:
    """The simulator's tokenizer and chat template called in-process (the HTTP path is
    covered in test_client); counts every call like the lane tokenizer does."""

    def __init__(self, max_model_len: int = 400_000, effort_tag: bool = True) -> None:
        self.impl = SimTokenizer.build()
        self.max_model_len = max_model_len
        self.effort_tag = effort_tag
        self.calls = 0
        self.counts: list[int] = []  # the token count of each call, in order

    async def tokenize(
        self, messages: Sequence[dict[str, str]], template_kwargs: dict[str, Any] | None
    ) -> TokenCount:
        self.calls += 1
        text = render_chat(list(messages))
        if self.effort_tag and template_kwargs:
            text += f"<effort {template_kwargs['reasoning_effort']}>"
        tokens = self.impl.encode(text)
        self.counts.append(len(tokens))
        return TokenCount(len(tokens), vector_sha256(tokens), self.max_model_len)


def cell(kind: WorkloadKind = WorkloadKind.NATURAL, **fields: Any) -> Cell:
    base: dict[str, Any] = {"id": "natural-2k", "kind": kind, "input_tokens": 2048}
    base |= {"concurrency": 2, "requests": 4, "warmups": 1}
    if kind is WorkloadKind.CONTROLLED:
        base["output_words"] = 64
    return Cell(**(base | fields))


async def plan_for(c: Cell, tokenizer: Any = None, **options: Any) -> RequestPlan:
    return await build_plan(
        c,
        seed=42,
        namespace="ns",
        model="tiny",
        tokenizer=tokenizer or InProcessTokenizer(),
        options=PlanOptions(**options),
    )


async def test_every_request_lands_on_its_token_target() -> None:
    plan = await plan_for(cell(input_tokens=3000, requests=6, concurrency=3))
    assert [r.phase for r in plan.requests] == [Phase.WARMUP] + [Phase.SCORED] * 6
    for request in plan.requests:
        assert abs(request.input_tokens - 3000) <= precision(3000), request.index
        assert request.target_input_tokens == 3000


async def test_hashes_are_of_the_token_vector_and_of_the_exact_body() -> None:
    tokenizer = InProcessTokenizer()
    plan = await plan_for(cell(), tokenizer)
    request = plan.requests[1]
    messages = [m.model_dump() for m in request.messages]
    tokens = tokenizer.impl.encode(render_chat(messages))
    assert request.prompt_sha256 == sha256_hex(json.dumps(tokens, separators=(",", ":")))
    body = Body.of(request).wire(plan.model)
    assert request.wire_sha256 == sha256_hex(body) and request.wire_bytes == len(body)
    wire = json.loads(body)
    assert wire["stream"] is True and wire["stream_options"] == {"include_usage": True}
    assert wire["model"] == "tiny" and wire["seed"] == request.seed
    assert "ignore_eos" not in wire and "chat_template_kwargs" not in wire


async def test_sampling_options_reach_the_wire_and_the_tokenizer() -> None:
    sampling = Sampling(reasoning_effort="high", ignore_eos=True, max_tokens=300)
    tokenizer = InProcessTokenizer()
    plan = await plan_for(cell(sampling=sampling), tokenizer)
    wire = json.loads(Body.of(plan.requests[1]).wire(plan.model))
    assert wire["chat_template_kwargs"] == {"reasoning_effort": "high"}
    assert wire["ignore_eos"] is True and wire["max_tokens"] == 300
    assert plan.requests[1].expect_length_finish
    # the effort changes the rendered prompt, so it was part of the tokenized text
    messages = [m.model_dump() for m in plan.requests[1].messages]
    plain = await tokenizer.tokenize(messages, None)
    assert plain.vector_sha256 != plan.requests[1].prompt_sha256


async def test_the_per_request_seed_is_sent_unless_the_matrix_turns_it_off() -> None:
    seeded = await plan_for(cell())
    unseeded = await plan_for(cell(sampling=Sampling(seed=False)))
    for with_seed, without in zip(seeded.requests, unseeded.requests, strict=True):
        assert with_seed.seed is not None
        assert json.loads(Body.of(with_seed).wire(seeded.model))["seed"] == with_seed.seed
        assert without.seed is None and "seed" not in json.loads(
            Body.of(without).wire(unseeded.model)
        )
        assert without.prompt_sha256 == with_seed.prompt_sha256  # only the body differs
    # the default is left out of the dump, so matrices frozen before the knob keep their id
    assert Sampling().model_dump() == Sampling.model_validate({"seed": True}).model_dump()
    assert "seed" not in Sampling().model_dump()
    assert Sampling(seed=False).model_dump()["seed"] is False


async def test_plans_are_deterministic_and_arm_independent() -> None:
    first, second = await plan_for(cell()), await plan_for(cell())
    assert first == second
    assert first.sha256() == second.sha256()


async def test_search_needs_few_round_trips_once_the_rate_is_learned() -> None:
    tokenizer = InProcessTokenizer()
    plan = await plan_for(cell(input_tokens=20_000, requests=8, concurrency=2), tokenizer)
    assert len(plan.requests) == 9
    # fingerprint + at most 4 trips for the first request, then ≤ 2 per request
    assert tokenizer.calls <= 1 + 4 + 2 * 8


async def test_a_300k_token_plan_needs_few_long_round_trips_and_none_past_the_context() -> None:
    """The rate is measured on two small prompts first, so the first long guess lands
    within about 1 %: one correction, not a search from the default rate."""
    tokenizer = InProcessTokenizer()
    edge = cell(
        WorkloadKind.CAPACITY_EDGE, input_tokens=300_000, requests=2, concurrency=1, warmups=0
    )
    plan = await plan_for(edge, tokenizer)
    assert all(abs(r.input_tokens - 300_000) <= precision(300_000) for r in plan.requests)
    long_trips = [n for n in tokenizer.counts if n > 10_000]
    # the first request: a guess and one correction; the second: its guess (from the
    # default rate instead, the first guess was 474K tokens and the search took four)
    assert len(long_trips) == 3, tokenizer.counts
    assert max(tokenizer.counts) <= 1.02 * 300_000, tokenizer.counts
    assert tokenizer.calls <= 1 + 2 + 4  # fingerprint, calibration, long trips


async def test_prefill_probe_sends_max_tokens_one_and_expects_the_length_finish() -> None:
    plan = await plan_for(cell(WorkloadKind.PREFILL_PROBE))
    assert {r.max_tokens for r in plan.requests} == {1}
    assert all(r.expect_length_finish for r in plan.requests)


async def test_warmups_are_distinct_from_scored_requests() -> None:
    plan = await plan_for(cell(warmups=4, requests=4))
    warm, scored = plan.phase(Phase.WARMUP), plan.phase(Phase.SCORED)
    assert {r.index for r in warm} == {r.index for r in scored} == {0, 1, 2, 3}
    assert not {r.prompt_sha256 for r in warm} & {r.prompt_sha256 for r in scored}
    assert not {r.nonce for r in warm} & {r.nonce for r in scored}


async def test_session_turn_two_extends_turn_one_token_for_token() -> None:
    tokenizer = InProcessTokenizer()
    plan = await plan_for(cell(WorkloadKind.SESSION_REUSE, warmups=0), tokenizer)
    turn_1, turn_2 = plan.requests[0], plan.requests[1]
    assert (turn_1.role, turn_2.role) == (RequestRole.TURN_1, RequestRole.TURN_2)
    first = tokenizer.impl.encode(render_chat([m.model_dump() for m in turn_1.messages]))
    second = tokenizer.impl.encode(render_chat([m.model_dump() for m in turn_2.messages]))
    shared = len(first) - 3  # all but the generation prompt's assistant header
    assert second[:shared] == first[:shared]
    assert turn_2.input_tokens > turn_1.input_tokens
    # turn 2's target is turn 1's plus what turn 2 adds: it inherits only turn 1's fit error
    added = turn_2.input_tokens - turn_1.input_tokens
    assert turn_2.target_input_tokens == turn_1.target_input_tokens + added


class OverlapCounter(InProcessTokenizer):
    """Counts how many of its calls are open at once (each yields to the loop first)."""

    def __init__(self) -> None:
        super().__init__()
        self.open = self.most_open = 0

    async def tokenize(
        self, messages: Sequence[dict[str, Any]], template_kwargs: dict[str, Any] | None
    ) -> TokenCount:
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        await asyncio.sleep(0.01)
        try:
            return await super().tokenize(messages, template_kwargs)
        finally:
            self.open -= 1


async def test_retokenize_overlaps_a_few_round_trips_and_keeps_the_order() -> None:
    plan = await plan_for(cell(requests=8, concurrency=2))
    overlapping = OverlapCounter()
    again = await retokenize(plan, overlapping, model="other")
    # the fingerprint beside RETOKENIZE_IN_FLIGHT requests, never all nine at once
    assert 1 < overlapping.most_open <= RETOKENIZE_IN_FLIGHT + 1
    assert overlapping.calls == 1 + len(plan.requests)
    one_by_one = InProcessTokenizer()
    for request, counted in zip(plan.requests, again.requests, strict=True):
        messages = [m.model_dump() for m in request.messages]
        tokens = await one_by_one.tokenize(messages, chat_template_kwargs(request.reasoning_effort))
        assert (counted.index, counted.prompt_sha256) == (request.index, tokens.vector_sha256)


async def test_head_of_line_plans_one_long_and_short_requests() -> None:
    plan = await plan_for(
        cell(WorkloadKind.HEAD_OF_LINE, input_tokens=8000, concurrency=3, requests=5, warmups=0),
        short_input_tokens=300,
        hol_delay_ms=40,
    )
    long, *shorts = plan.requests
    assert long.role is RequestRole.LONG_PREFILL and abs(long.input_tokens - 8000) <= 4
    assert long.start_offset_ms == 40
    assert all(abs(s.input_tokens - 300) <= 2 for s in shorts)
    # stream 1 decodes when the long prefill lands; stream 2 queues behind it
    assert [(s.stream, s.start_offset_ms) for s in shorts] == [(1, 0), (2, 80), (1, 0), (2, 80)]


async def test_retokenize_keeps_the_text_and_takes_the_other_lanes_counts() -> None:
    plan = await plan_for(cell())
    same = await retokenize(plan, InProcessTokenizer())
    assert same == plan
    other = await retokenize(plan, InProcessTokenizer(effort_tag=False), model="other-name")
    assert [r.messages for r in other.requests] == [r.messages for r in plan.requests]
    assert other.model == "other-name"
    assert other.requests[0].wire_sha256 != plan.requests[0].wire_sha256
    assert other.requests[0].prompt_sha256 == plan.requests[0].prompt_sha256  # no effort set


async def test_a_target_below_the_scaffold_is_refused_with_the_minimum() -> None:
    with pytest.raises(
        FaceoffError, match=r"below the prompt scaffold.*Raise input_tokens to at least \d+"
    ):
        await plan_for(cell(input_tokens=10))


async def test_a_target_beyond_max_model_len_is_refused() -> None:
    with pytest.raises(FaceoffError, match="max_model_len is 1500"):
        await plan_for(cell(), InProcessTokenizer(max_model_len=1500))


async def test_plan_artifact_round_trips_through_its_file(tmp_path: Path) -> None:
    plan = await plan_for(cell(WorkloadKind.NEEDLE))
    path = plan.write(tmp_path / "requests.json")
    assert RequestPlan.read(path) == plan
    assert all(r.marker and r.marker in r.messages[0].content for r in plan.requests)
    with pytest.raises(FaceoffError, match="refusing to overwrite"):
        plan.write(path)


async def test_a_plan_file_replaced_since_it_was_read_is_read_and_hashed_afresh(
    tmp_path: Path,
) -> None:
    """RequestPlan.read and sha256 keep the last few plans (faceoff.recent): a plan written
    over the file since is what the next read returns, with its own hash."""
    first = await plan_for(cell())
    path = first.write(tmp_path / "requests.json")
    assert RequestPlan.read(path) is RequestPlan.read(path)
    assert RequestPlan.read(path).sha256() == first.sha256() == first.sha256()
    second = first.model_copy(update={"seed": first.seed + 1})
    second.write(path, replace=True)
    again = RequestPlan.read(path)
    assert again.seed == first.seed + 1
    assert again.sha256() == second.sha256() != first.sha256()
