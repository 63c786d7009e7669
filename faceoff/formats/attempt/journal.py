"""``journal.jsonl``: one line per terminal request, the outcome guards and evidence read.
The same concept at another layer: ``workload.journal`` (the writer and the reader).

Format history of ``schema_version``:
  1 — first release; later in 1, ``first_event_ns``, ``usage_ns`` and ``done_ns`` were
      added with a default of None, so lines written before them still read.
  2 — ``send_ns`` is when the request's bytes were handed to the socket (in 1: when the
      client began the request, before aiohttp took a connection and wrote it, which is
      now ``queued_ns``); ``schedule_delay_ns`` = send − due. Lines of version 1 still
      read (both new fields None). Later in 2, an open-loop request's line carries its
      ``step`` and ``rate_rps`` (absent from closed-loop lines and from lines written before).
      Later in 2, ``phase`` may be ``probe`` (a needle search's probe) and ``role``
      ``turn_3`` … ``turn_8`` (an agentic conversation's later turns).
  3 — ``arrival_stamps``: how the line's arrival times were dated, ``kernel`` (the
      kernel's receive stamp of each read) or ``read`` (the client's clock as each read
      returned, as every line of versions 1 and 2 was); None when no event arrived.
      ``status`` ``ok`` may carry ``finish_reason`` None: the server ended the stream with
      usage and [DONE] but named no reason (before 3 such a stream was a stream_error).
      Lines of versions 1 and 2 still read (``arrival_stamps`` None). Later in 3, ``phase``
      may be ``pilot`` (one request of a cell contract before the scored cells).
  4 — ``chunk_stamps``: one letter per token-bearing chunk, how its arrival was dated:
      ``k`` the kernel's receive stamp of the read that carried it, ``w`` the event loop's
      wake-up before that read (the kernel had merged a later segment into the chunk's
      bytes, and with them its later stamp), ``r`` the client's clock as the read returned.
      ``arrival_stamps`` ``kernel`` now means every event was dated from the socket (k or
      w). Lines of versions 1 to 3 still read (``chunk_stamps`` None: unknown). Later in 4,
      ``client_receive`` ``spin`` where the client's loop polled instead of sleeping while
      the request was in flight (left out for ``sleep``, as every line before it was).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from matrix.fields import omitted_at
from matrix.model import ClientReceive

ArrivalStamps = Literal["kernel", "read"]  # the kernel's receive stamp, or the read's clock


JOURNAL_NAME = "journal.jsonl"
# Where a line keeps the request metrics made of it (``workload.metrics.measures_of``).
MEASURES_KEPT = "measures"


class Phase(StrEnum):
    WARMUP = "warmup"  # journaled, never scored
    SCORED = "scored"
    DIAGNOSTIC = "diagnostic"  # journaled, never scored
    PROBE = "probe"  # a needle search's probe: judged by what it recalled, never a sample
    PILOT = "pilot"  # one request of a cell contract before the scored cells; never scored


class Usage(Spec):
    prompt_tokens: int = Field(ge=0, description="usage.prompt_tokens from the API.")
    completion_tokens: int = Field(ge=0, description="usage.completion_tokens from the API.")
    reasoning_tokens: int | None = Field(
        default=None,
        ge=0,
        description="usage.completion_tokens_details.reasoning_tokens when the server reports it.",
    )


class Status(StrEnum):
    OK = "ok"
    HTTP_ERROR = "http_error"  # the server answered with a non-200 status
    STREAM_ERROR = "stream_error"  # broken connection, error event, no [DONE], bad SSE
    TIMEOUT = "timeout"  # the per-request deadline expired
    LENGTH_LIMIT = "length_limit"  # stopped at max_tokens without having asked for it
    CANCELLED = "cancelled"  # cell deadline, SIGTERM, or never sent


class RequestRole(StrEnum):
    SINGLE = "single"  # an independent request
    LONG_PREFILL = "long_prefill"  # head_of_line: the long cold prefill in front
    SHORT = "short"  # head_of_line: a short request behind it
    TURN_1 = "turn_1"  # session_reuse, agentic: opens the conversation
    TURN_2 = "turn_2"  # session_reuse: repeats turn 1's prefix; agentic: after a tool result
    TURN_3 = "turn_3"  # agentic: the context grown by one more tool result, and so on
    TURN_4 = "turn_4"
    TURN_5 = "turn_5"
    TURN_6 = "turn_6"
    TURN_7 = "turn_7"
    TURN_8 = "turn_8"


def turn_role(turn: int) -> RequestRole:
    """The role of a conversation's ``turn``-th request (from 1)."""
    return RequestRole(f"turn_{turn}")


def turn_of(role: RequestRole) -> int | None:
    """Which turn of its conversation a request is; None for a role outside one."""
    head, _, number = role.value.partition("_")
    return int(number) if head == "turn" else None


class RequestOutcome(Artifact):
    """Everything the client observed about one request, written once when it ended."""

    schema_version: Literal[1, 2, 3, 4] = Field(
        default=4, description="Journal line format version."
    )
    cell_id: str = Field(description="Cell of the plan.")
    arm: str = Field(description="Arm the client was pointed at.")
    attempt: int = Field(ge=1, description="Attempt number of the cell run.")
    plan_sha256: str = Field(description="sha256 of the requests.json content that was run.")
    client_run: str = Field(description="Random id of the client process that wrote the line.")
    phase: Phase = Field(
        description="scored | warmup | diagnostic | pilot | probe; only scored lines count."
    )
    index: int = Field(ge=0, description="Request index within its phase (the pair key).")
    stream: int = Field(ge=0, description="Closed-loop stream that sent it.")
    role: RequestRole = Field(description="Role of the request in its workload's pattern.")
    status: Status = Field(description="Terminal status.")
    response_id: str | None = Field(description="The completion id the server sent (chatcmpl-…).")
    finish_reason: str | None = Field(
        description="Last finish_reason seen, e.g. stop, length; None when the server named "
        "none (ok when it ended with usage and [DONE])."
    )
    http_status: int | None = Field(description="HTTP status; None when never answered.")
    error: str | None = Field(description="Error body or reason (truncated to 4 KiB).")
    canary: str = Field(description="The request's canary, binding the line to its plan entry.")
    prompt_sha256: str = Field(description="sha256 of the planned prompt-token vector.")
    wire_sha256: str = Field(description="sha256 of the request body bytes sent.")
    target_input_tokens: int = Field(description="Input token target of the plan.")
    input_tokens: int = Field(description="Prompt tokens by the lane's /tokenize at plan time.")
    max_tokens: int = Field(description="max_tokens sent.")
    usage: Usage | None = Field(description="API usage; None when the server sent none.")
    wall_anchor_utc: datetime = Field(description="UTC wall clock read together with mono_anchor.")
    mono_anchor_ns: int = Field(description="perf_counter_ns read together with the wall anchor.")
    due_ns: int | None = Field(
        description="When it became due (closed loop: aligned start or end of the stream's "
        "previous request; open loop: its step's start plus its seeded arrival / rate)."
    )
    queued_ns: int | None = Field(
        default=None,
        description="When the client began the request, before aiohttp took a connection "
        "and wrote it; None if never begun.",
    )
    send_ns: int | None = Field(
        description="When the request's bytes (headers and body, one write) were handed to "
        "the socket; None if never written. Version 1: when the client began the request."
    )
    schedule_delay_ns: int | None = Field(
        default=None,
        description="send_ns − due_ns: how late the request went out against its schedule "
        "(the client's event loop, aiohttp's connection and write); None if never written.",
    )
    headers_ns: int | None = Field(description="When the response status and headers were read.")
    first_event_ns: int | None = Field(
        default=None,
        description="Arrival of the first SSE event of any kind (vLLM: the role chunk).",
    )
    first_output_ns: int | None = Field(
        description="Arrival (socket read) of the first non-empty reasoning or content chunk."
    )
    first_content_ns: int | None = Field(
        description="Arrival (socket read) of the first non-empty visible content chunk."
    )
    last_token_ns: int | None = Field(
        description="Arrival (socket read) of the last non-empty reasoning or content chunk."
    )
    usage_ns: int | None = Field(
        default=None, description="Arrival of the (last) event that carried usage."
    )
    done_ns: int | None = Field(default=None, description="Arrival of data: [DONE].")
    end_ns: int = Field(description="When the client finished with the request.")
    events: int = Field(ge=0, description="SSE data events received, [DONE] included.")
    chunk_offsets_us: list[int] = Field(
        description="Arrival of each token-bearing chunk, µs after send_ns, in order."
    )
    chunk_kinds: str = Field(
        description="One letter per token-bearing chunk: r reasoning, c content, b both."
    )
    chunk_stamps: str | None = Field(
        default=None,
        pattern=r"^[kwr]*$",
        description="One letter per token-bearing chunk, how its arrival was dated: k the "
        "kernel's receive stamp of its read, w the event loop's wake-up before that read (a "
        "later segment had been merged into its bytes), r the client's clock as the read "
        "returned; None in lines before version 4.",
    )
    output_chars: int = Field(ge=0, description="Characters of visible content.")
    output_words: int = Field(ge=0, description="Whitespace-separated words of visible content.")
    output_sha256: str = Field(description="sha256 of the visible content (UTF-8).")
    output_excerpt: str = Field(description="First 1,024 characters of the visible content.")
    reasoning_chars: int = Field(ge=0, description="Characters of reasoning content.")
    contract_words: int | None = Field(description="Output contract (exactly N words), if any.")
    marker_expected: str | None = Field(description="Needle marker planted in the prompt.")
    marker_found: bool | None = Field(description="Whether the marker came back verbatim.")
    refusal: bool = Field(
        description="The lane declined the request: a refusal delta, a content_filter stop, or "
        "an HTTP 400 over the maximum context length."
    )
    step: int | None = Field(
        default=None,
        ge=0,
        exclude_if=omitted_at(None),
        description="Open loop: the sweep step that sent it (0 for a single run).",
    )
    rate_rps: float | None = Field(
        default=None,
        gt=0,
        exclude_if=omitted_at(None),
        description="Open loop: the arrival rate (requests/s) of its step.",
    )
    arrival_stamps: ArrivalStamps | None = Field(
        default=None,
        description="How the arrival times were dated: kernel (from the socket: the kernel's "
        "receive stamp of each read, or the loop's wake-up where a later segment was merged "
        "in), read (the client's clock as some read returned); None when no event arrived, "
        "and in lines of versions 1 and 2 (read).",
    )
    client_receive: ClientReceive = Field(
        default="sleep",
        exclude_if=omitted_at("sleep"),
        description="How the client's loop waited for bytes while the request was in flight: "
        "sleep (in select, woken by the kernel) or spin (polling, a core of its own); left "
        "out for sleep.",
    )

    @property
    def scored(self) -> bool:
        return self.phase is Phase.SCORED

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, which is measured afresh from its own fields when asked (pydantic would copy
        the metrics this line kept: ``workload.metrics.measures_of``)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop(MEASURES_KEPT, None)
        return copied

    def of_attempt(self, cell_id: str, arm: str, attempt: int, plan_sha256: str | None) -> bool:
        """Written for this cell attempt on this arm, from this plan (any plan when None: the
        plan could not be read); every other line of a journal is foreign to it."""
        return (
            self.cell_id == cell_id
            and self.arm == arm
            and self.attempt == attempt
            and (plan_sha256 is None or self.plan_sha256 == plan_sha256)
        )

    @property
    def unnamed_finish(self) -> bool:
        """It ended ok, but the server never named a finish_reason (usage and [DONE] only)."""
        return self.status is Status.OK and self.finish_reason is None

    @property
    def ran_to_contract(self) -> bool:
        """It has an output contract and ran to its end (ok, or stopped at max_tokens), so
        its words can be held to the contract."""
        return self.contract_words is not None and self.status in (Status.OK, Status.LENGTH_LIMIT)

    @property
    def contract_gap(self) -> int:
        """Words written beyond (+) or short of (−) the contract; 0 without one."""
        return 0 if self.contract_words is None else self.output_words - self.contract_words

    @property
    def overran_contract(self) -> bool:
        """The contract's breach: more words than it allows, or stopped at max_tokens."""
        stopped = self.finish_reason == "length" or self.status is Status.LENGTH_LIMIT
        return self.ran_to_contract and (self.contract_gap > 0 or stopped)

    @property
    def underran_contract(self) -> bool:
        """Fewer words than the contract: reported, not a breach (the output was bounded)."""
        return self.ran_to_contract and self.contract_gap < 0
