"""Prompt text for every workload kind, fixed by (seed, namespace, cell, phase, index).

Conventions the lanes (and the simulator) rely on:
- the user message *starts* with the nonce, so no two requests share a cached prefix
  block (a suffix nonce would still hit the prefix cache); there is no system prompt
  for the same reason;
- a controlled prompt states its contract as ``exactly N words``;
- a needle prompt holds the line ``The secret marker is: <MARKER>``;
- a structured decode prompt mentions JSON and holds records; no other prompt does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from faceoff.formats.attempt.journal import Phase, RequestRole
from matrix.cell import Cell, WorkloadKind
from workload.text import derive_hex, prose, records, split_at_depth

TextKind = Literal["prose", "structured"]
Message = dict[str, str]

REPLY_WORDS = 60  # the planned assistant turn of a session


@dataclass(frozen=True)
class PromptKey:
    """What fixes a request's text; the arm is deliberately not part of it."""

    seed: int
    namespace: str
    cell_id: str
    phase: Phase
    index: int

    def parts(self, purpose: str) -> tuple[object, ...]:
        return (self.seed, self.namespace, self.cell_id, self.phase.value, self.index, purpose)


@dataclass(frozen=True)
class Prompt:
    messages: tuple[Message, ...]
    nonce: str
    canary: str
    text_kind: TextKind
    marker: str | None = None
    contract_words: int | None = None


def text_kind(cell: Cell) -> TextKind:
    return "structured" if cell.kind is WorkloadKind.DECODE_STRUCTURED else "prose"


def nonce_of(key: PromptKey) -> str:
    return derive_hex(16, *key.parts("nonce"))


def canary_of(key: PromptKey) -> str:
    return "CANARY-" + derive_hex(12, *key.parts("canary")).upper()


def marker_of(key: PromptKey) -> str:
    raw = derive_hex(12, *key.parts("marker")).upper()
    return f"MK-{raw[:4]}-{raw[4:8]}-{raw[8:]}"


def compose(cell: Cell, key: PromptKey, role: RequestRole, filler_words: int) -> Prompt:
    """The prompt of one request whose document has ``filler_words`` words."""
    if role is RequestRole.TURN_2:
        raise ValueError("a turn-2 prompt is built from its turn-1 prompt: use follow_up()")
    kind = text_kind(cell) if role is not RequestRole.SHORT else "prose"
    nonce, canary = nonce_of(key), canary_of(key)
    document = _document(kind, filler_words, key)
    marker = marker_of(key) if cell.kind is WorkloadKind.NEEDLE else None
    if marker is not None:
        head, tail = split_at_depth(document, cell.needle_depth)
        document = f"{head}\nThe secret marker is: {marker}\n{tail}"
    contract = cell.output_words if cell.kind is WorkloadKind.CONTROLLED else None
    content = (
        f"[{nonce}] Read the reference document below.\n\n{document}\n\n"
        f"Request canary: {canary}.\n{_task(cell.kind, role, contract)}"
    )
    message = {"role": "user", "content": content}
    return Prompt((message,), nonce, canary, kind, marker, contract)


def follow_up(first: Prompt, key: PromptKey) -> Prompt:
    """Turn 2 of a session: turn 1's messages, a planned reply, and a new question.

    The reply is planned rather than taken from the lane's answer, so that both arms
    send the same tokens; the lane still finds turn 1's prompt in its prefix cache.
    """
    canary = canary_of(key)
    reply = {"role": "assistant", "content": prose(REPLY_WORDS, *key.parts("reply"))}
    question = {
        "role": "user",
        "content": f"Request canary: {canary}.\nNow name three more details of the same document.",
    }
    messages = (*first.messages, reply, question)
    return Prompt(messages, first.nonce, canary, first.text_kind)


def _document(kind: TextKind, words: int, key: PromptKey) -> str:
    if kind == "structured":
        return records(words, *key.parts("document"))
    return prose(words, *key.parts("document"))


def _task(kind: WorkloadKind, role: RequestRole, contract: int | None) -> str:
    if role is RequestRole.SHORT:
        return "In one short sentence, name the first word of the document."
    if contract is not None:
        return (
            f"Write exactly {contract} words about the document. "
            "Output only those words, with no preamble and no closing remark."
        )
    return _TASKS.get(kind, _NATURAL)


_NATURAL = "Summarize the document in your own words, then say which topics it returns to most."

_TASKS: dict[WorkloadKind, str] = {
    WorkloadKind.PREFILL_PROBE: "Reply with the single word: ready.",
    WorkloadKind.DECODE_STRUCTURED: (
        "Return a JSON array of 60 objects with the keys id, name and tag, taken from the "
        "records above, in order. Output only the JSON."
    ),
    WorkloadKind.DECODE_PROSE: (
        "Write a long, flowing story in plain prose inspired by the document. "
        "Use no lists, no headings and no code."
    ),
    WorkloadKind.NEEDLE: (
        "What is the secret marker stated in the document? Reply with the marker only, verbatim."
    ),
}
