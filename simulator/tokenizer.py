"""A deterministic, reversible tokenizer and a ChatML-style chat template.

Text is cut into pieces the way byte-level BPE tokenizers pre-tokenize: short
letter runs (at most three letters, with an optional leading space), digit runs,
punctuation, whitespace, and the chat template's special tokens. Each piece has a
fixed id; any other character falls back to one token per UTF-8 byte. The
vocabulary (~76K ids) is enumerated, not learned, so counts are exact and stable
across machines and versions, and ``decode(encode(text)) == text`` always.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

BOS = "<|startoftext|>"
EOS = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIALS = (EOS, BOS, IM_START, IM_END, "<think>", "</think>", "<|pad|>")
SPECIAL_SLOTS = 32  # ids 0..31 are reserved for special tokens
BYTE_BASE = SPECIAL_SLOTS  # ids 32..287 are the raw bytes
LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
PUNCT = string.punctuation


class TokenizerError(ValueError):
    """Input that cannot be tokenized or detokenized (e.g. an id outside the vocabulary)."""


def _letter_runs(first: str, rest: str, longest: int) -> Iterable[str]:
    for tail in range(longest):
        for combo in itertools.product(rest, repeat=tail):
            for head in first:
                yield head + "".join(combo)


def _base_pieces() -> Iterable[str]:
    yield from _letter_runs(LOWER, LOWER, 3)
    yield from _letter_runs(UPPER, LOWER, 3)
    for width in (1, 2, 3):
        yield from ("".join(d) for d in itertools.product(string.digits, repeat=width))
    yield from PUNCT


def _piece_pattern() -> re.Pattern[str]:
    specials = "|".join(re.escape(s) for s in SPECIALS)
    punct = re.escape(PUNCT)
    return re.compile(
        rf"{specials}| ?[a-z]{{1,3}}| ?[A-Z][a-z]{{0,2}}| ?[0-9]{{1,3}}| ?[{punct}]|\n|\t| |.",
        re.DOTALL,
    )


@dataclass(frozen=True)
class Tokenizer:
    """Build once per server (``Tokenizer.build()``); encoding is a dict lookup per piece."""

    pieces: tuple[bytes, ...]  # id -> the bytes it stands for
    ids: dict[str, int]
    pattern: re.Pattern[str]

    @classmethod
    def build(cls) -> Tokenizer:
        table: list[bytes] = [s.encode() for s in SPECIALS]
        table += [f"<|reserved_{i}|>".encode() for i in range(len(table), SPECIAL_SLOTS)]
        table += [bytes([b]) for b in range(256)]
        for base in _base_pieces():
            table += [base.encode(), (" " + base).encode()]
        table += [b"\n", b"\t", b" "]
        ids = {piece.decode(): i for i, piece in enumerate(table) if i >= BYTE_BASE + 256}
        ids.update({s: i for i, s in enumerate(SPECIALS)})
        return cls(pieces=tuple(table), ids=ids, pattern=_piece_pattern())

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        lookup = self.ids.get
        for piece in self.pattern.findall(text):
            token = lookup(piece)
            if token is None:
                out.extend(BYTE_BASE + b for b in piece.encode())
            else:
                out.append(token)
        return out

    def token_bytes(self, token: int) -> bytes:
        if not 0 <= token < len(self.pieces):
            raise TokenizerError(
                f"Token id {token} is out of vocabulary (vocab size {len(self.pieces)})"
            )
        return self.pieces[token]

    def decode(self, tokens: Sequence[int]) -> str:
        return b"".join(self.token_bytes(t) for t in tokens).decode("utf-8", "replace")

    def token_strs(self, tokens: Sequence[int]) -> list[str]:
        """Per-token strings as ``/tokenize`` shows them; lone bytes as ``<0xNN>``."""
        out = []
        for token in tokens:
            raw = self.token_bytes(token)
            out.append(
                f"<0x{raw[0]:02X}>" if BYTE_BASE <= token < BYTE_BASE + 256 else raw.decode()
            )
        return out

    def check_ids(self, tokens: Sequence[Any]) -> list[int]:
        """Validate a prompt given as token ids."""
        for token in tokens:
            if isinstance(token, bool) or not isinstance(token, int):
                raise TokenizerError(f"Token ids must be integers, got {token!r}")
            self.token_bytes(token)
        return list(tokens)


def message_text(content: Any) -> str:
    """A message's content: a string, ``None`` (tool-call turns), or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "text"):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise TokenizerError(f"Content part of type {kind!r} is not supported; use text")
            texts.append(str(part.get("text", "")))
        return "".join(texts)
    raise TokenizerError(f"Message content must be a string or a list of parts, got {content!r}")


def render_chat(
    messages: Sequence[Any], *, add_generation_prompt: bool = True, continue_final: bool = False
) -> str:
    """ChatML with a BOS token; the generation prompt opens the assistant turn."""
    if not messages:
        raise TokenizerError("messages must be a non-empty list")
    parts = [BOS]
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            raise TokenizerError(f"messages[{index}] must be an object with a role")
        text = message_text(message.get("content"))
        last = index == len(messages) - 1
        closing = "" if continue_final and last else f"{IM_END}\n"
        parts.append(f"{IM_START}{message['role']}\n{text}{closing}")
    if add_generation_prompt and not continue_final:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


def last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message.get("content"))
    return ""
