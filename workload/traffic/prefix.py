"""Shared system prompts of a synthetic cell (``[cells.prefix]``): N groups, each a prefix.

Each request is drawn into one of ``groups`` groups by (campaign seed, namespace, cell,
phase, index) and opens with its group's system prompt: a tag, then words fitted on the
lane so that the system turn alone is ``tokens`` tokens. The request's own part (the
nonce first, as in every synthetic prompt) follows, so the requests of a group share their
system prompt's blocks and nothing after them. The group's text is fixed by (seed,
namespace, cell, phase, group): warmups have prompts of their own, and neither the arm nor
the request is part of it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from faceoff.formats.attempt.journal import Phase
from matrix.traffic import Prefix
from workload.fit import Rate, fit_filler
from workload.prompts import Message, Prompt, PromptKey
from workload.text import derive_hex, derive_int, word_stream
from workload.tokenizer import Tokenizer


def group_of(key: PromptKey, groups: int) -> int:
    """The group a request is drawn into."""
    return derive_int(groups, *key.parts("prefix-group"))


def prefix_text(parts: tuple[object, ...], words: int) -> str:
    return f"[{derive_hex(16, *parts)}] You are an assistant of this deployment. " + " ".join(
        word_stream(words, *parts)
    )


def with_prefix(system: Message, prompt: Prompt) -> Prompt:
    """``prompt`` opened by the group's system message."""
    return dataclasses.replace(prompt, messages=(system, *prompt.messages))


class SharedPrefixes:
    """The groups' system messages of one cell on one lane, each fitted once."""

    def __init__(
        self, prefix: Prefix, tokenizer: Tokenizer, template_kwargs: dict[str, Any] | None
    ) -> None:
        self.prefix, self.tokenizer, self.template_kwargs = prefix, tokenizer, template_kwargs
        self.rate = Rate()
        self.messages: dict[tuple[Phase, int], Message] = {}

    async def message(self, key: PromptKey) -> Message:
        """The system message of ``key``'s group."""
        group = group_of(key, self.prefix.groups)
        if (key.phase, group) not in self.messages:
            parts = (key.seed, key.namespace, key.cell_id, key.phase.value, "prefix", group)
            fit = await fit_filler(
                lambda n: _system(parts, n),
                self.prefix.tokens,
                self.tokenizer,
                template_kwargs=self.template_kwargs,
                rate=self.rate,
                where=f"cell {key.cell_id} shared prefix {group}",
            )
            self.messages[(key.phase, group)] = fit.prompt.messages[0]
        return self.messages[(key.phase, group)]


def _system(parts: tuple[object, ...], words: int) -> Prompt:
    tag = str(parts[-1])
    message = {"role": "system", "content": prefix_text(parts, words)}
    return Prompt((message,), nonce=tag, canary="", text_kind="prose")
