"""Token counts from the lane's own tokenizer, through its ``/tokenize`` endpoint.

The chat template is applied by the lane (``messages`` plus the same
``chat_template_kwargs`` the request will carry), so the count and the token
vector are exactly what the engine will prefill. Results are cached per lane by
the request body that determines them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from faceoff.canonical import canonical_bytes, content_sha256, sha256_hex
from faceoff.errors import FaceoffError

if TYPE_CHECKING:  # the caller brings the session; plan readers must not load aiohttp
    import aiohttp

# Tokenized once per plan: a change of tokenizer or chat template changes this vector.
FINGERPRINT_MESSAGES: tuple[dict[str, str], ...] = (
    {"role": "user", "content": "faceoff tokenizer fingerprint: The quick brown fox, 0123."},
    {"role": "assistant", "content": "Jumps over the lazy dog!"},
    {"role": "user", "content": "Again?"},
)


@dataclass(frozen=True)
class TokenCount:
    count: int
    vector_sha256: str  # sha256 of the token ids as a compact JSON array
    max_model_len: int | None
    tokens: tuple[int, ...] = field(default=(), compare=False, repr=False)  # the ids themselves


def shared_prefix(vectors: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every vector shares (the chat template's preamble, say)."""
    if not vectors:
        return 0
    shortest = min(len(v) for v in vectors)
    for position in range(shortest):
        if len({v[position] for v in vectors}) > 1:
            return position
    return shortest


def shared_by_all(vectors: Sequence[Sequence[int]]) -> int | None:
    """The shared prefix of the vectors; None for one vector (nothing shares it) or when the
    tokenizer gave no token ids."""
    return shared_prefix(vectors) if len(vectors) > 1 and all(vectors) else None


class Tokenizer(Protocol):
    async def tokenize(
        self, messages: Sequence[dict[str, str]], template_kwargs: dict[str, Any] | None
    ) -> TokenCount: ...


def vector_sha256(tokens: Sequence[int]) -> str:
    return content_sha256(list(tokens))


class LaneTokenizer:
    """``POST {base_url}/tokenize`` with chat messages, cached by request body."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, model: str) -> None:
        self.session = session
        self.url = base_url.rstrip("/") + "/tokenize"
        self.model = model
        self.calls = 0
        self._cache: dict[str, TokenCount] = {}

    async def tokenize(
        self, messages: Sequence[dict[str, str]], template_kwargs: dict[str, Any] | None
    ) -> TokenCount:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "add_generation_prompt": True,
        }
        if template_kwargs:
            body["chat_template_kwargs"] = template_kwargs
        data = canonical_bytes(body)
        key = sha256_hex(data)
        if key not in self._cache:
            self._cache[key] = await self._post(data)
        return self._cache[key]

    async def _post(self, data: bytes) -> TokenCount:
        self.calls += 1
        headers = {"Content-Type": "application/json"}
        async with self.session.post(self.url, data=data, headers=headers) as resp:
            text = await resp.text()
            if resp.status != 200:
                raise FaceoffError(
                    f"/tokenize answered HTTP {resp.status}: {text[:500]}",
                    where=self.url,
                    fix="check that the lane is ready and serves the planned model",
                )
        return _token_count(text, self.url)


def _token_count(text: str, url: str) -> TokenCount:
    try:
        answer = json.loads(text)
        tokens = answer["tokens"]
        return TokenCount(
            len(tokens), vector_sha256(tokens), answer.get("max_model_len"), tuple(tokens)
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise FaceoffError(
            f"/tokenize answer has no token list: {text[:300]}",
            where=url,
            fix="the lane must implement vLLM's /tokenize with chat messages",
        ) from exc


async def fingerprint(tokenizer: Tokenizer) -> str:
    """sha256 of the token vector of a fixed conversation: names tokenizer + chat template."""
    return (await tokenizer.tokenize(FINGERPRINT_MESSAGES, None)).vector_sha256
