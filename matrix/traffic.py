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

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from faceoff.artifact import Spec

if TYPE_CHECKING:  # matrix.model validates with check_traffic: no import cycle at run time
    from matrix.model import Cell, Matrix

SHA256_HEX = r"^[0-9a-f]{64}$"
MAX_PREFIX_TOKENS = 10_000_000  # as matrix.model.MAX_TOKENS
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


def check_traffic(cell: Cell) -> None:
    """A dataset or trace cell has its source, a prefix opens independent prompts; else
    ValueError."""
    kind = cell.kind.value
    for name, table in (("dataset", cell.dataset), ("trace", cell.trace)):
        if (kind == name) != (table is not None):
            raise ValueError(
                f"a {name} cell needs a [cells.{name}] table with its file and format"
                if table is None
                else f"{name}: only a {name} cell has one (kind is {kind})"
            )
    if (kind == "trace") != (cell.arrival.value == "trace"):
        raise ValueError(
            'a trace cell sends at its recorded times: arrival = "trace" (the loader sets it), '
            "and no other cell has that arrival"
        )
    if cell.prefix is not None:
        _check_prefix(cell, cell.prefix)


def _check_prefix(cell: Cell, prefix: Prefix) -> None:
    if cell.kind.value not in PREFIXABLE:
        raise ValueError(
            f"prefix: a {cell.kind.value} cell has no independent prompts to share a system "
            f"prompt; kinds with one: {', '.join(sorted(PREFIXABLE))}"
        )
    if prefix.tokens >= cell.input_tokens:
        raise ValueError(
            f"prefix.tokens = {prefix.tokens} leaves no room in input_tokens = "
            f"{cell.input_tokens}; the shared system prompt is part of each prompt"
        )


def reuses_prefixes(cell: Cell) -> bool:
    """Whether the cell's prompts share prefixes by design (its prefix cache is warm)."""
    dataset, trace = cell.dataset, cell.trace
    return (
        (trace is not None and trace.format == "mooncake")  # an Azure trace shares nothing
        or cell.prefix is not None
        or (dataset is not None and not dataset.nonce)
    )


def changed_sources(frozen: Matrix, current: Matrix) -> list[str]:
    """Per cell of both matrices, the source file whose bytes changed since it was frozen."""
    now = {cell.id: cell for cell in current.cells}
    found = []
    for cell in frozen.cells:
        was, other = _source(cell), _source(now[cell.id]) if cell.id in now else None
        if was is not None and other is not None and was.sha256 != other.sha256:
            found.append(
                f"cell {cell.id}: {other.file} now hashes to {other.sha256}, but the campaign "
                f"was frozen with {was.sha256}"
            )
    return found


def _source(cell: Cell) -> SourceFile | None:
    return cell.dataset or cell.trace
