"""Plans from files and shared prefixes, on the simulator's tokenizer and chat template.

Dataset rows drawn by the seed and sent as written (the nonce first), trace records whose
equal hash_ids blocks are equal token blocks, shared system prompts by group; each plan
rebuilt from the rows it holds, and a second arm's retokenized plan matched with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from faceoff.canonical import file_sha256
from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import DatasetSource, RequestPlan, TraceSource
from faceoff.formats.attempt.verdict import Outcome
from guards.pair import pair_integrity
from guards.source_rows import rebuild_differences
from matrix.cell import Cell
from simulator.tokenizer import Tokenizer as SimTokenizer
from simulator.tokenizer import render_chat
from workload.fit import precision
from workload.plan import build_plan, retokenize
from workload.prompts import PromptKey
from workload.tokenizer import TokenCount, shared_prefix, vector_sha256
from workload.traffic.prefix import group_of

DATA = Path(__file__).resolve().parents[3] / "matrix/examples/data"
EMPTY = [{"role": "user", "content": ""}]


class SimTokens:
    """The simulator's tokenizer and chat template in-process, token ids included."""

    def __init__(self, max_model_len: int = 8192) -> None:
        self.impl, self.max_model_len = SimTokenizer.build(), max_model_len

    async def tokenize(
        self, messages: Sequence[dict[str, str]], template_kwargs: dict[str, Any] | None
    ) -> TokenCount:
        return self.count(messages)

    def count(self, messages: Sequence[dict[str, str]]) -> TokenCount:
        tokens = self.impl.encode(render_chat(list(messages)))
        return TokenCount(len(tokens), vector_sha256(tokens), self.max_model_len, tuple(tokens))


def source_cell(kind: str, table: dict[str, Any], **fields: Any) -> Cell:
    table = table | {"sha256": file_sha256(Path(table["file"]))}
    base: dict[str, Any] = {"id": f"{kind}-cell", "kind": kind, "concurrency": 2, kind: table}
    return Cell.model_validate(base | fields)


async def plan(cell: Cell, seed: int = 7, tokens: SimTokens | None = None) -> RequestPlan:
    return await build_plan(cell, seed=seed, namespace="ns", model="sim-tiny",
                            tokenizer=tokens or SimTokens())  # fmt: skip


def chat_cell(**fields: Any) -> Cell:
    table = {"file": str(DATA / "chat-50.jsonl"), "format": "openai"} | fields.pop("table", {})
    base = {"input_tokens": 600, "requests": 12, "warmups": 2}
    return source_cell("dataset", table, **(base | fields))


async def test_dataset_rows_are_drawn_by_the_seed_and_sent_as_written_nonce_first() -> None:
    cell = chat_cell()
    built = await plan(cell)
    source = built.source
    assert isinstance(source, DatasetSource) and len(source.rows) == 14
    assert source.skipped > 0  # the file has rows longer than 600 tokens
    for request, row in zip(built.requests, source.rows, strict=True):
        assert (request.phase, request.index) == (row.phase, row.index)
        sent = [m.model_dump() for m in request.messages]
        assert sent[0]["content"] == f"[{request.nonce}] {row.messages[0].content}"
        assert sent[1:] == [t.model_dump() for t in row.messages[1:]]
        assert request.input_tokens == request.target_input_tokens == row.prompt_tokens <= 600
        assert row.output_tokens is not None and request.ignore_eos
        assert request.max_tokens == min(row.output_tokens, cell.sampling.max_tokens)
    # the rows given an output length keep it (every fourth line of the sample gives one)
    lines = (DATA / "chat-50.jsonl").read_text().splitlines()
    given = {r.position: json.loads(lines[r.position]).get("output_tokens") for r in source.rows}
    assert all(r.output_tokens == given[r.position] for r in source.rows if given[r.position])
    assert rebuild_differences(built, cell) == []

    again, reseeded = await plan(cell), await plan(cell, seed=8)
    assert again == built  # the seed and the cell fix the rows, never the arm
    assert isinstance(reseeded.source, DatasetSource)
    assert [r.position for r in reseeded.source.rows] != [r.position for r in source.rows]


async def test_a_dataset_without_nonce_or_row_lengths_sends_the_rows_as_they_are() -> None:
    cell = chat_cell(table={"nonce": False, "output": "cell"}, sampling={"max_tokens": 64})
    built = await plan(cell)
    assert isinstance(built.source, DatasetSource)
    for request, row in zip(built.requests, built.source.rows, strict=True):
        assert [m.model_dump() for m in request.messages] == [t.model_dump() for t in row.messages]
        assert (request.max_tokens, request.ignore_eos, request.nonce) == (64, False, "")
        assert row.output_tokens is None
    assert not cell.cold and rebuild_differences(built, cell) == []


async def test_a_row_edited_after_planning_no_longer_rebuilds_its_request() -> None:
    cell = chat_cell()
    built = await plan(cell)
    assert isinstance(built.source, DatasetSource)
    rows = list(built.source.rows)
    turn = rows[5].messages[0].model_copy(update={"content": "edited"})
    rows[5] = rows[5].model_copy(update={"messages": [turn, *rows[5].messages[1:]]})
    rows[6] = rows[6].model_copy(update={"prompt_tokens": rows[6].prompt_tokens + 1})
    edited = built.model_copy(update={"source": built.source.model_copy(update={"rows": rows})})
    found = rebuild_differences(edited, cell)
    assert found[0].endswith(f"request {rows[5].index}: messages"), found
    assert "target" in found[1] and len(found) == 2
    pair = pair_integrity(built, edited)
    assert pair.outcome is Outcome.FAILED and "source rows" in pair.detail


def trace_cell(tmp_path: Path, records: list[dict[str, Any]], **fields: Any) -> Cell:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    table = {"file": str(path), "format": "mooncake"} | fields.pop("table", {})
    longest = max(r["input_length"] for r in records)
    base = {"input_tokens": longest, "requests": len(records), "arrival": "trace"}
    return source_cell("trace", table, **(base | fields))


RECORDS: list[dict[str, Any]] = [
    {"timestamp": 0, "input_length": 900, "output_length": 8, "hash_ids": [0, 1]},
    {"timestamp": 1500, "input_length": 1400, "output_length": 9, "hash_ids": [0, 1, 2]},
    {"timestamp": 1700, "input_length": 600, "output_length": 7, "hash_ids": [5, 6]},
    {"timestamp": 4000, "input_length": 1400, "output_length": 9, "hash_ids": [0, 1, 2]},
]


async def test_equal_hash_ids_blocks_are_equal_token_blocks(tmp_path: Path) -> None:
    cell = trace_cell(tmp_path, RECORDS, warmups=1, table={"time_scale": 2.0})
    tokens = SimTokens()
    built = await plan(cell, tokens=tokens)
    scored = built.phase(Phase.SCORED)
    vectors = [tokens.count([m.model_dump() for m in r.messages]).tokens for r in scored]
    preamble = shared_prefix([vectors[0], vectors[2]])  # nothing shared but the template
    assert preamble < 10
    # record 0's whole prompt (but the template's closing) is record 1's start
    assert shared_prefix([vectors[0], vectors[1]]) >= 900 - 10
    assert vectors[1] == vectors[3]  # the same blocks, the same length: the same prompt
    for request, record in zip(scored, RECORDS, strict=True):
        assert abs(request.input_tokens - record["input_length"]) <= precision(900)
        assert (request.max_tokens, request.ignore_eos) == (record["output_length"], True)
    # each whole block is block_tokens tokens on the lane, by itself
    empty = tokens.count(EMPTY).count
    assert isinstance(built.source, TraceSource)
    for block in ("scored/h0", "scored/h1", "scored/h5"):
        assert block in built.source.block_words
    first_block = scored[0].messages[0].content.split(" [")[0]
    alone = tokens.count([{"role": "user", "content": first_block}]).count - empty
    assert abs(alone - 512) <= 2
    # the warmup replays record 0 with texts of its own phase: nothing shared with it
    warmup = built.phase(Phase.WARMUP)[0]
    own = tokens.count([m.model_dump() for m in warmup.messages]).tokens
    assert shared_prefix([own, vectors[0]]) == preamble
    assert rebuild_differences(built, cell) == []


async def test_a_trace_plan_is_due_at_its_recorded_times_and_knows_its_reuse(
    tmp_path: Path,
) -> None:
    cell = trace_cell(tmp_path, RECORDS, table={"time_scale": 2.0}, concurrency=4)
    built = await plan(cell)
    assert built.load is not None and built.load.rate is not None
    due = [r.arrival_s / built.load.rate for r in built.phase(Phase.SCORED)]  # type: ignore[operator]
    assert due == pytest.approx([0.0, 0.75, 0.85, 2.0])  # recorded seconds / time_scale
    assert isinstance(built.source, TraceSource)
    reuse = built.source.reuse
    # record 1 reuses record 0's 900 tokens; record 3 all of record 1's 1400
    assert (reuse.hit_tokens, reuse.input_tokens) == (900 + 1400, 4300)
    other = await retokenize(built, SimTokens())
    assert pair_integrity(built, other).outcome is Outcome.PASSED


async def test_an_azure_trace_shares_nothing_but_the_template(tmp_path: Path) -> None:
    path = tmp_path / "azure.csv"
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    lines += [f"2023-11-16 18:15:4{k}.1000000,700,12" for k in range(3)]
    path.write_text("\n".join(lines) + "\n")
    cell = source_cell("trace", {"file": str(path), "format": "azure"}, input_tokens=700,
                       requests=3, arrival="trace")  # fmt: skip
    tokens = SimTokens()
    built = await plan(cell, tokens=tokens)
    vectors = [tokens.count([m.model_dump() for m in r.messages]).tokens for r in built.requests]
    assert shared_prefix(vectors) < 10 and cell.cold
    assert isinstance(built.source, TraceSource) and built.source.reuse.hit_tokens == 0


async def test_requests_of_a_group_share_its_system_prompt_and_nothing_after_it() -> None:
    cell = Cell.model_validate({"id": "shared", "kind": "natural", "input_tokens": 600,
                                "concurrency": 2, "requests": 12,
                                "prefix": {"tokens": 256, "groups": 3}})  # fmt: skip
    tokens = SimTokens()
    built = await plan(cell, tokens=tokens)
    groups: dict[int, set[str]] = {}
    for request in built.requests:
        system, user = (m.model_dump() for m in request.messages)
        assert system["role"] == "system" and user["content"].startswith(f"[{request.nonce}]")
        key = PromptKey(7, "ns", cell.prompt_id, request.phase, request.index)
        groups.setdefault(group_of(key, 3), set()).add(system["content"])
        assert abs(tokens.count([system]).count - 256) <= 2  # the system turn alone
        assert abs(request.input_tokens - 600) <= precision(600)
    assert len(groups) == 3 and all(len(texts) == 1 for texts in groups.values())
    assert not cell.cold and built.shared_prefix_tokens is not None
    other = await retokenize(built, SimTokens())
    assert pair_integrity(built, other).outcome is Outcome.PASSED
