"""A fidelity cell's requests: the corpus cut into windows, scored and continued on a lane.
The same concept at another layer: ``evidence.stats.fidelity``,
``evidence.views.card.fidelity``, ``matrix.fidelity``.

The corpus is tokenized by the lane's ``/tokenize`` (the reference's ids are the ones
every arm scores; each arm's own tokenization of the corpus is hashed, so two arms whose
tokenizers differ are told apart). Each window is one ``/v1/completions`` request with
the ids as the prompt, ``max_tokens = 1`` and ``prompt_logprobs = k``; a greedy prompt is
a window's first half, continued at temperature 0 with ``return_token_ids``. HTTP goes
through an injected ``Post``, so this module holds no transport of its own.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from faceoff.errors import FaceoffError
from faceoff.formats.fidelity_scores import ScoredPositions, ScoresError, from_prompt_logprobs
from matrix.fidelity import FidelityCell
from workload.tokenizer import vector_sha256


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no HTTP answer
    body: Any  # the parsed JSON, or None
    error: str  # what went wrong, in words ("" when ok)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and self.body is not None


Post = Callable[[str, dict[str, Any], float], Answer]  # (url, body, timeout_s) -> answer


class LaneRefused(Exception):
    """The lane refused or failed a fidelity request; ``reason`` is the block's code."""

    def __init__(self, reason: str, sentence: str) -> None:
        super().__init__(sentence)
        self.reason = reason
        self.sentence = sentence


def corpus_text(data: bytes, fmt: str, where: str) -> str:
    """The corpus as one text: the file, or its JSON lines' ``text`` joined by blank lines."""
    text = data.decode("utf-8")
    if fmt == "text":
        return text
    parts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise FaceoffError(
                    f'line {number} is not {{"text": ...}}', where=where, fix="fix the line"
                )
            parts.append(row["text"])
    return "\n\n".join(parts)


def cut_windows(tokens: Sequence[int], cell: FidelityCell) -> list[list[int]]:
    """The cell's windows over ``tokens``; too short a corpus is refused with the counts."""
    starts = range(0, len(tokens) - cell.input_tokens + 1, cell.step)
    windows = [list(tokens[s : s + cell.input_tokens]) for s in starts][: cell.windows]
    if len(windows) < cell.windows:
        raise LaneRefused(
            "corpus_too_short",
            f"the corpus holds {len(tokens)} tokens on the reference: {len(windows)} windows of "
            f"{cell.input_tokens} every {cell.step}, not the {cell.windows} asked; give a "
            "longer corpus or ask fewer windows",
        )
    return windows


@dataclass(frozen=True)
class ScoringLane:
    """Where a fidelity cell's requests go: the lane's URL, its model name, the transport."""

    base_url: str
    model: str
    post: Post
    timeout_s: float
    deadline: float = math.inf  # time.monotonic() by which the cell must be done on this arm

    def ask(self, path: str, body: dict[str, Any]) -> Any:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise LaneRefused("deadline", "the cell's deadline_s passed before it was scored")
        timeout = min(self.timeout_s, left)
        answer = self.post(self.base_url + path, {"model": self.model, **body}, timeout)
        if not answer.ok:
            raise LaneRefused(refusal_reason(answer), f"{path} answered {describe(answer)}")
        return answer.body

    def tokenize(self, text: str) -> list[int]:
        body = self.ask("/tokenize", {"prompt": text, "add_special_tokens": False})
        return [int(t) for t in body["tokens"]]

    def score(self, window: Sequence[int], k: int) -> ScoredPositions:
        body = self.ask(
            "/v1/completions",
            {"prompt": list(window), "max_tokens": 1, "temperature": 0, "prompt_logprobs": k},
        )
        try:
            entries = body["choices"][0]["prompt_logprobs"]
            return from_prompt_logprobs(window, entries or [], k)
        except (KeyError, IndexError, TypeError, ScoresError) as exc:
            raise LaneRefused(
                "no_prompt_logprobs", f"the lane's answer has no usable prompt_logprobs: {exc}"
            ) from exc

    def greedy(self, prompt: Sequence[int], tokens: int) -> list[int]:
        body = self.ask(
            "/v1/completions",
            {
                "prompt": list(prompt),
                "max_tokens": tokens,
                "temperature": 0,
                "ignore_eos": True,
                "return_token_ids": True,
            },
        )
        ids = body["choices"][0].get("token_ids")
        if not isinstance(ids, list):
            raise LaneRefused("no_token_ids", "the lane's greedy answer has no token_ids")
        return [int(t) for t in ids]


def refusal_reason(answer: Answer) -> str:
    if answer.status is None:
        return "lane_unreachable"
    if "logprobs" in answer.error:
        return "logprobs_refused"
    return "request_failed"


def describe(answer: Answer) -> str:
    head = "no answer" if answer.status is None else f"HTTP {answer.status}"
    return f"{head}: {answer.error[:300]}" if answer.error else head


Scored = Callable[[int, ScoredPositions], None]  # (window index, its scores) as each ends


def score_windows(
    lane: ScoringLane,
    windows: Sequence[Sequence[int]],
    k: int,
    concurrency: int,
    scored: Scored | None = None,
) -> list[ScoredPositions]:
    """Every window scored, ``concurrency`` in flight, in window order; ``scored`` is told
    of each window as soon as it is (so that a killed run can keep what it had)."""

    def one(index: int) -> ScoredPositions:
        positions = lane.score(windows[index], k)
        if scored is not None:
            scored(index, positions)
        return positions

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, range(len(windows))))


def greedy_answers(
    lane: ScoringLane, prompts: Sequence[Sequence[int]], tokens: int
) -> list[list[int]]:
    return [lane.greedy(p, tokens) for p in prompts]


def corpus_sha256(tokens: Sequence[int]) -> str:
    """What names a tokenizer here: its ids for the corpus (two that differ cannot compare)."""
    return vector_sha256(tokens)
