"""The agentic plan's shape on the simulator's real tokenizer: each turn is the previous
context, a planned tool call and a tool result of the declared size, at C1."""

from __future__ import annotations

import itertools
import json

from faceoff.formats.attempt.journal import Phase, RequestRole
from faceoff.formats.attempt.request_plan import PlannedRequest
from matrix.cell import Cell, WorkloadKind
from tests.workload.test_plan import InProcessTokenizer, plan_for
from workload.agentic import TOOL_NAME
from workload.fit import precision

TURNS, TOOL_TOKENS, OPENING = 3, 300, 900


def agentic_cell() -> Cell:
    return Cell.model_validate({
        "id": "agentic-900-c1", "kind": WorkloadKind.AGENTIC, "input_tokens": OPENING,
        "concurrency": 1, "requests": 2 * TURNS, "warmups": 1,
        "agentic": {"turns": TURNS, "tool_result_tokens": TOOL_TOKENS},
    })  # fmt: skip


async def test_each_turn_grows_the_last_by_a_tool_call_and_a_result_of_the_declared_size() -> None:
    plan = await plan_for(agentic_cell(), InProcessTokenizer())
    scored = plan.phase(Phase.SCORED)
    roles = [r.role for r in scored]
    assert roles == [RequestRole.TURN_1, RequestRole.TURN_2, RequestRole.TURN_3] * 2
    assert [(r.stream, r.order) for r in scored] == [(0, i) for i in range(2 * TURNS)]
    for conversation in (scored[:TURNS], scored[TURNS:]):
        opening = conversation[0]
        assert [m.role for m in opening.messages] == ["system", "user"]
        assert opening.messages[0].content.startswith(f"[{opening.nonce}]")  # cold per conversation
        assert '"name": "search_documents"' in opening.messages[0].content  # the tool schema
        assert abs(opening.input_tokens - OPENING) <= precision(OPENING)
        for before, turn in itertools.pairwise(conversation):
            assert_grows(before, turn)
    assert scored[0].nonce != scored[TURNS].nonce  # two conversations, two cold openings
    assert len({r.canary for r in scored}) == len(scored)
    warmup = plan.phase(Phase.WARMUP)[0]
    assert warmup.messages[0].role == "system"  # a cell warmup opens a conversation too


def assert_grows(before: PlannedRequest, turn: PlannedRequest) -> None:
    """``turn`` repeats ``before``'s messages, then a tool call and a sized tool result."""
    assert turn.messages[: len(before.messages)] == before.messages
    call, result = turn.messages[len(before.messages) :]
    assert call.role == "assistant" and json.loads(call.content)["tool"] == TOOL_NAME
    assert result.role == "user" and result.content.startswith(f"Tool result ({TOOL_NAME})")
    assert turn.nonce == before.nonce and turn.canary in result.content
    # the result is searched to the declared size beyond the call
    added = turn.input_tokens - before.input_tokens
    assert TOOL_TOKENS < added <= TOOL_TOKENS + 150, added  # + the call and its wrapper
    assert abs(turn.input_tokens - turn.target_input_tokens) <= precision(turn.target_input_tokens)
