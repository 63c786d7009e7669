"""``requests.json``: the request plan of a cell, the exact requests in order, hashed.
The same concept at another layer: ``workload.plan`` (which builds it).

A plan holds each request as sent (its messages and sampling, the hash of its body and of its
prompt tokens on the lane: ``workload.request.Body`` makes the body), an open-loop cell's load
(``workload.schedule`` computes it) and a dataset or trace cell's rows
(``workload.traffic.rows`` rebuilds the requests from them).

Format history of ``schema_version``:
  1 — first release; later in 1, a request's ``seed`` may be null (``sampling.seed = false``:
      the body carries no seed), so plans written before still read; later in 1, an
      open-loop cell's plan has ``load`` and its scored requests ``step`` and ``arrival_s``
      (left out of a closed-loop plan, whose bytes and hash are unchanged); later in 1
      too, a request's ``reasoning_effort`` may differ from ``cell.sampling``'s where the
      cell declares it a variant (matrix/variants.py), with the shape unchanged; later in
      1, ``shared_prefix_tokens`` (None in plans written before it); later in 1, an
      agentic cell's requests have system, user and assistant messages and roles turn_1 …
      turn_8, and a needle_search cell's plan has no requests (its client plans each probe;
      its ``shared_prefix_tokens`` is measured on two short probes); later in 1, a dataset or
      trace cell's plan has ``source`` (its file and the row of each request), an open-loop
      ``load`` may have ``burstiness`` or ``ramp``, and a cell with shared prefixes opens its
      requests with a system message (each left out where unused: older plans keep their
      bytes).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, model_validator

from faceoff.artifact import Artifact, Spec
from faceoff.formats.attempt.journal import Phase, RequestRole
from faceoff.recent import Recent, identity
from matrix.arrival import Arrival, Ramp, Sweep
from matrix.cell import Cell
from matrix.fields import omitted_at
from matrix.slo import Slo

PLAN_NAME = "requests.json"


class ChatMessage(Spec):
    role: Literal["system", "user", "assistant"] = Field(description="Chat role.")
    content: str = Field(description="Message text, exactly as sent.")


class PlannedRequest(Spec):
    phase: Phase = Field(description="warmup | scored | diagnostic.")
    index: int = Field(ge=0, description="Index within the phase; the pair key.")
    stream: int = Field(ge=0, description="Closed-loop stream that sends it.")
    order: int = Field(ge=0, description="Position within its stream.")
    start_offset_ms: int = Field(ge=0, description="First of a stream: delay after the start.")
    role: RequestRole = Field(description="Role in the workload's pattern.")
    text_kind: Literal["prose", "structured"] = Field(description="Kind of document text.")
    messages: list[ChatMessage] = Field(description="Chat messages; the nonce starts the first.")
    max_tokens: int = Field(ge=1, description="max_tokens sent.")
    temperature: float = Field(description="Sampling temperature sent.")
    top_p: float = Field(description="top_p sent.")
    seed: int | None = Field(description="Sampling seed sent; None: none (sampling.seed off).")
    reasoning_effort: str | None = Field(description="chat_template_kwargs.reasoning_effort.")
    ignore_eos: bool = Field(description="ignore_eos sent (only when true).")
    nonce: str = Field(description="Cold-cache nonce at the very start of the prompt.")
    canary: str = Field(description="Per-request canary string in the prompt.")
    marker: str | None = Field(description="Needle marker, when the prompt holds one.")
    contract_words: int | None = Field(description="Output contract: exactly N words.")
    filler_words: int = Field(ge=0, description="Words of document text the search settled on.")
    target_input_tokens: int = Field(description="Input token target.")
    input_tokens: int = Field(description="Prompt tokens by the lane's /tokenize (template on).")
    prompt_sha256: str = Field(description="sha256 of the prompt-token vector (compact JSON).")
    wire_sha256: str = Field(description="sha256 of the serialized request body.")
    wire_bytes: int = Field(description="Size of the serialized request body.")
    expect_length_finish: bool = Field(
        description="finish_reason 'length' is the intended end (ignore_eos or max_tokens=1)."
    )
    step: int | None = Field(
        default=None,
        ge=0,
        exclude_if=omitted_at(None),
        description="Open loop: the sweep step (0 for a single run) that sends it.",
    )
    arrival_s: float | None = Field(
        default=None,
        ge=0,
        exclude_if=omitted_at(None),
        description="Open loop: seconds after its step's start it is due, at 1 request/s "
        "(divided by the step's rate when sent).",
    )


class PlanOptions(Spec):
    short_input_tokens: int = Field(
        default=512, ge=1, description="head_of_line: input target of the short requests."
    )
    hol_delay_ms: int = Field(
        default=250, ge=0, description="head_of_line: short requests are due this much later."
    )
    scored_phase: Phase = Field(
        default=Phase.SCORED, description="Phase of the non-warmup requests (diagnostic runs)."
    )


class OpenLoad(Spec):
    """The open-loop part of a request plan (absent for a closed-loop cell)."""

    arrival: Arrival = Field(description="poisson or constant.")
    rate: float | None = Field(description="Requests/s of a single open-loop run.")
    sweep: Sweep | None = Field(description="The ladder of a sweep cell.")
    requests_per_step: int = Field(ge=1, description="Scored requests of each step.")
    max_in_flight: int = Field(ge=1, description="The cell's concurrency: requests in flight.")
    slo: Slo | None = Field(description="The SLO each step is judged by (cell's or campaign's).")
    burstiness: float | None = Field(
        default=None,
        exclude_if=omitted_at(None),  # a plan written before it keeps its bytes
        description="Gamma arrivals: the gaps' shape.",
    )
    ramp: Ramp | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="A ramp: rate is its mean rate and arrival_s its times at that rate.",
    )

    @model_validator(mode="after")
    def _judged(self) -> OpenLoad:
        if (self.rate is None) == (self.sweep is None):
            raise ValueError("an open load has a rate or a sweep, not both")
        if self.sweep is not None and self.slo is None:
            raise ValueError("a sweep's steps are judged by an SLO; give one")
        return self

    @property
    def steps(self) -> int:
        return self.sweep.step_count if self.sweep is not None else 1


class Turn(Spec):
    role: Literal["system", "user", "assistant"] = Field(description="Chat role in the file.")
    content: str = Field(description="The turn's text as the file has it.")


class DatasetRow(Spec):
    phase: Phase = Field(description="Phase of the request it became.")
    index: int = Field(ge=0, description="Index of the request it became.")
    position: int = Field(ge=0, description="The row's index in the file (line or element).")
    messages: list[Turn] = Field(description="The row's prompt, before any nonce.")
    prompt_tokens: int = Field(description="Prompt tokens on the planning lane (the target).")
    output_tokens: int | None = Field(
        description="The row's output length (given, or its answer's tokens on the lane); "
        "None: the cell's sampling."
    )


class TraceRow(Spec):
    phase: Phase = Field(description="Phase of the request it became.")
    index: int = Field(ge=0, description="Index of the request it became.")
    position: int = Field(ge=0, description="The record's index in the file.")
    at_ms: float = Field(description="Recorded time, ms after the file's first record.")
    input_length: int = Field(ge=1, description="Recorded prompt tokens: the input target.")
    output_length: int = Field(ge=1, description="Recorded output tokens.")
    hash_ids: list[int] | None = Field(description="Mooncake block ids; None: none shared.")


class Reuse(Spec):
    hit_tokens: int = Field(description="Prompt tokens an earlier scored record computed.")
    input_tokens: int = Field(description="Prompt tokens of the scored records.")
    ratio: float | None = Field(description="hit_tokens / input_tokens.")


class DatasetSource(Spec):
    kind: Literal["dataset"] = Field(default="dataset", description="A dataset's rows.")
    file: str = Field(description="The dataset file, as the frozen matrix names it.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    format: str = Field(description="sharegpt | openai | prompts.")
    nonce: bool = Field(description="Whether a nonce opens each prompt.")
    skipped: int = Field(
        ge=0, description="Rows drawn but left out: longer than input_tokens, or no output length."
    )
    rows: list[DatasetRow] = Field(description="The row of each planned request.")


class TraceSource(Spec):
    kind: Literal["trace"] = Field(default="trace", description="A trace's records.")
    file: str = Field(description="The trace file, as the frozen matrix names it.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    format: str = Field(description="mooncake | azure.")
    time_scale: float = Field(description="Replay speed: recorded time / time_scale.")
    block_tokens: int = Field(description="Tokens of each hash_ids block.")
    block_words: dict[str, int] = Field(
        description="Words of each block's text, by '<phase>/<block id>': fitted on the "
        "planning lane to block_tokens."
    )
    reuse: Reuse = Field(
        description="Prefix reuse computed offline from the scored records' hash_ids: what "
        "an engine with an unbounded prefix cache of 1-token blocks would hit."
    )
    rows: list[TraceRow] = Field(description="The record of each planned request.")


class RequestPlan(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Plan format version.")
    cell: Cell = Field(description="The cell spec, as frozen in the matrix.")
    seed: int = Field(description="Campaign seed.")
    namespace: str = Field(description="Prompt namespace.")
    model: str = Field(description="Served model name put in every request body.")
    tokenizer_fingerprint: str = Field(description="sha256 of a fixed conversation's tokens.")
    max_model_len: int | None = Field(description="max_model_len reported by /tokenize.")
    options: PlanOptions = Field(description="Layout options used.")
    requests: list[PlannedRequest] = Field(description="Warmups first, then the rest.")
    load: OpenLoad | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Open loop: arrival, rate or sweep, in-flight bound and SLO; None: closed.",
    )
    shared_prefix_tokens: int | None = Field(
        default=None,
        exclude_if=omitted_at(None),  # a plan written before it keeps its hash
        description="Leading tokens every request's prompt shares on this lane (the chat "
        "template's preamble, before the nonce): a cold cell may hit them in the prefix cache.",
    )
    source: DatasetSource | TraceSource | None = Field(
        default=None,
        discriminator="kind",
        exclude_if=omitted_at(None),
        description="A dataset or trace cell: its file and the row of every request "
        "(workload/traffic/rows.py).",
    )

    def phase(self, phase: Phase) -> list[PlannedRequest]:
        return [r for r in self.requests if r.phase is phase]

    @classmethod
    def read(cls, path: Path) -> Self:
        """As every artifact is read; the last few plans read are kept (``faceoff.recent``),
        by file and by content: a cell's two arms mostly plan the same bytes, which are then
        parsed and hashed once (a plan is immutable, so both arms may hold one object)."""
        key = identity(path)
        if key is None:
            return super().read(path)
        found = _READ.get((cls, key), lambda: cls._by_content(path))
        assert isinstance(found, cls)
        return found

    @classmethod
    def _by_content(cls, path: Path) -> Self:
        raw = cls.read_bytes(path)
        found = _PARSED.get((cls, hashlib.sha256(raw).digest()), lambda: cls.parse(raw, path))
        assert isinstance(found, cls)
        return found

    def sha256(self) -> str:
        """The content hash, kept for the last few plans hashed (by object: the plan held)."""
        return _HASHED.get(id(self), lambda: (self, super(RequestPlan, self).sha256()))[1]


_READ: Recent[RequestPlan] = Recent(2)  # a cell's two arms: a plan is tens of MB at scale


_PARSED: Recent[RequestPlan] = Recent(2)  # the same plans, by their bytes' sha256


_HASHED: Recent[tuple[RequestPlan, str]] = Recent(2)  # the plan is held: its id is not reused
