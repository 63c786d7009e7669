"""Traffic a cell brings from outside: dataset prompts, a replayed trace, shared prefixes.

- A ``dataset`` cell (``kind = "dataset"``, ``[cells.dataset]``) sends prompts from a
  user's file: ShareGPT-style JSON, OpenAI chat JSONL (``messages``) or plain prompt JSONL
  (``matrix.sources``). Rows are drawn by the campaign seed; a request's output length
  is its row's (``output = "row"``: ``ignore_eos`` with that length) or the cell's sampling.
- A ``trace`` cell (``kind = "trace"``, ``[cells.trace]``) replays a Mooncake-style JSONL or
  an Azure LLM inference CSV at its recorded times (``time_scale`` times faster), each
  prompt synthesized so that equal ``hash_ids`` blocks are equal token blocks.
- ``[cells.prefix]`` gives a synthetic cell ``groups`` distinct system prompts of
  ``tokens`` tokens, each request sharing its group's.

The file is named by its path (resolved against the matrix's folder when the matrix is
loaded) and pinned by its sha256, part of the frozen matrix: a campaign that resumes with a
changed file is refused (``changed_sources``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec

SHA256_HEX = r"^[0-9a-f]{64}$"
MAX_PREFIX_TOKENS = 10_000_000  # as matrix.fields.MAX_TOKENS
MAX_GROUPS = 100_000  # as many groups as requests at most
MAX_TIME_SCALE = 1e6
# Kinds whose requests are independent prompts a shared system prompt can open.
PREFIXABLE = frozenset(
    {"natural", "controlled", "capacity_edge", "prefill_probe", "decode_structured",
     "decode_prose", "needle"}
)  # fmt: skip


class SourceFile(Spec):
    file: str = Field(
        min_length=1,
        description="Path of the file, resolved against the matrix file's folder when loaded.",
    )
    sha256: str = Field(
        pattern=SHA256_HEX,
        description="sha256 of the file's bytes; the loader takes it when the TOML leaves it "
        "out, and refuses a file that differs from a pinned one.",
    )


class Dataset(SourceFile):
    format: Literal["sharegpt", "openai", "prompts"] = Field(
        description="sharegpt: a JSON array of {conversations: [{from, value}]}; openai: JSONL "
        "of {messages: [{role, content}]}; prompts: JSONL of {prompt}. Any line may give "
        "output_tokens."
    )
    output: Literal["row", "cell"] = Field(
        default="row",
        description="row: max_tokens is the row's output length (its output_tokens, else its "
        "reference answer's tokens on the lane), sent with ignore_eos; cell: the cell's sampling.",
    )
    nonce: bool = Field(
        default=True,
        description="Open the first message with a nonce, so the cell stays cold (nothing "
        "shared between requests); false sends the rows as they are and the cell reuses "
        "whatever prefixes they share.",
    )


class Trace(SourceFile):
    format: Literal["mooncake", "azure"] = Field(
        description="mooncake: JSONL of {timestamp (ms), input_length, output_length, "
        "hash_ids}; azure: CSV with TIMESTAMP, ContextTokens, GeneratedTokens."
    )
    time_scale: float = Field(
        default=1.0, gt=0, le=MAX_TIME_SCALE, description="Replay this many times faster."
    )
    block_tokens: int = Field(
        default=512,
        ge=16,
        le=1_000_000,
        description="Tokens of each hash_ids block (Mooncake's are 512).",
    )


class Prefix(Spec):
    tokens: int = Field(
        ge=1,
        le=MAX_PREFIX_TOKENS,
        description="Tokens of each shared system prompt (its chat turn included).",
    )
    groups: int = Field(
        default=1, ge=1, le=MAX_GROUPS, description="Distinct system prompts, requests drawn "
        "among them by the campaign seed."
    )  # fmt: skip
