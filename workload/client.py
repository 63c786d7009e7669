"""One streamed chat completion over aiohttp, timed with ``perf_counter_ns``.
The same concept at another layer: ``flows.campaign.client``.

aiohttp rather than httpx: on the loopback benchmark
``benchmarks/client_http_choice.py`` it reads an SSE stream with less CPU per
chunk and a smaller timing error, most of all at C32. Each SSE event is dated by
the socket read that delivered its last byte (``workload.transport``), not by when
the reading coroutine got to it, and by the kernel's receive stamp of that read
where the socket gives one, or the loop's wake-up where a later segment was merged
into it (``workload.rx_stamps``); the request is dated by when its
bytes were handed to the socket (``send_ns``), not by when the client began it
(``queued_ns``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import aiohttp

from faceoff.canonical import sha256_hex
from faceoff.formats.attempt.journal import ArrivalStamps, RequestOutcome, Status
from faceoff.formats.attempt.request_plan import PlannedRequest
from matrix.model import ClientReceive
from workload.rx_stamps import in_flight
from workload.stream import SseFramer, StreamProtocolError, StreamState
from workload.transport import ON_SENT, Arrivals, check_timed

Clock = Callable[[], int]

ERROR_LIMIT = 4096
EXCERPT_CHARS = 1024
READ_BUFFER = 1 << 20  # large reads: a long answer or a burst of chunks in one call
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


@dataclass(frozen=True)
class RunContext:
    """What every journal line of one client run shares."""

    cell_id: str
    arm: str
    attempt: int
    plan_sha256: str
    client_run: str
    wall_anchor_utc: datetime
    mono_anchor_ns: int
    receive: ClientReceive = "sleep"  # how its loop waits for bytes (rx_stamps.set_receive)


@dataclass
class Exchange:
    """One request in flight; filled in as it goes, frozen into an outcome at the end."""

    request: PlannedRequest
    due_ns: int | None
    queued_ns: int | None = None
    send_ns: int | None = None
    headers_ns: int | None = None
    end_ns: int | None = None
    http_status: int | None = None
    status: Status | None = None
    error: str | None = None
    state: StreamState = field(default_factory=StreamState)
    arrival_stamps: ArrivalStamps | None = None  # how its events' arrivals were dated
    rate_rps: float | None = None  # open loop: the arrival rate of the request's step

    def fail(self, status: Status, error: str) -> None:
        self.status, self.error = status, error[:ERROR_LIMIT]

    def sent(self, at_ns: int) -> None:
        """The request's bytes were handed to the socket at ``at_ns``."""
        self.send_ns = at_ns

    @property
    def final_status(self) -> Status:
        """The journal line's status: a request that never reached one was cancelled."""
        return self.status or Status.CANCELLED

    @property
    def ended_ns(self) -> int:
        if self.end_ns is None:
            raise ValueError(f"request {self.request.index} has not ended; set end_ns first")
        return self.end_ns


async def stream_chat(
    session: aiohttp.ClientSession, url: str, body: bytes, ex: Exchange, clock: Clock
) -> None:
    """Send ``body`` and read the SSE answer into ``ex``; errors become statuses."""
    try:
        ex.queued_ns = clock()
        trace = {ON_SENT: ex.sent}
        async with session.post(
            url, data=body, headers=JSON_HEADERS, trace_request_ctx=trace
        ) as resp:
            ex.headers_ns, ex.http_status = clock(), resp.status
            if resp.status != 200:
                ex.fail(Status.HTTP_ERROR, await resp.text(errors="replace"))
                return
            await _read_events(resp, ex, clock)
    except (aiohttp.ClientError, StreamProtocolError, OSError) as exc:
        ex.fail(Status.STREAM_ERROR, f"{type(exc).__name__}: {exc}")
        return
    ex.status, ex.error = terminal_status(ex)


async def _read_events(resp: aiohttp.ClientResponse, ex: Exchange, clock: Clock) -> None:
    framer, state, arrivals = SseFramer(), ex.state, Arrivals.of(resp)
    check_timed(arrivals, ex.send_ns)
    try:
        while data := await resp.content.readany():
            read_ns = clock()
            for payload, end in framer.feed(data):
                arrived_ns = arrivals.at(end, read_ns)
                state.observe(payload, arrived_ns, arrivals.stamp)
    finally:
        ex.arrival_stamps = arrivals.stamps
    if framer.pending.strip():
        raise StreamProtocolError(f"stream ended inside an event: {framer.pending[:200]!r}")


def terminal_status(ex: Exchange) -> tuple[Status, str | None]:
    """How a stream that ran to its end ended. A server that ends with usage and [DONE] but
    never names a finish_reason (vLLM always does; other OpenAI-compatible servers need not)
    answered in full: ok, its reason None (a matrix may count those as errors)."""
    state = ex.state
    if state.error is not None:
        return Status.STREAM_ERROR, f"error event: {state.error}"[:ERROR_LIMIT]
    if not state.done:
        return Status.STREAM_ERROR, "stream ended before data: [DONE]"
    if state.finish_reason is None and state.usage is None:
        return Status.STREAM_ERROR, "stream ended without a finish_reason or usage"
    if state.finish_reason == "length" and not ex.request.expect_length_finish:
        return Status.LENGTH_LIMIT, None
    return Status.OK, None


async def timed_exchange(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    ex: Exchange,
    *,
    clock: Clock,
    deadline_s: float | None,
) -> None:
    """``stream_chat`` under the per-request deadline; ``ex.end_ns`` is always set. A
    spinning loop (``rx_stamps.set_receive``) polls while it runs."""
    try:
        with in_flight(asyncio.get_running_loop()):
            async with asyncio.timeout(deadline_s):
                await stream_chat(session, url, body, ex, clock)
    except TimeoutError:
        ex.fail(Status.TIMEOUT, f"request deadline of {deadline_s} s reached")
    finally:
        ex.end_ns = clock()


def outcome_of(ctx: RunContext, ex: Exchange) -> RequestOutcome:
    """Freeze a finished exchange into its journal line (on the journal's writer thread: the
    exchange is never touched again once it ended)."""
    request, state = ex.request, ex.state
    text = state.text
    send, due = ex.send_ns, ex.due_ns
    return RequestOutcome(
        cell_id=ctx.cell_id,
        arm=ctx.arm,
        attempt=ctx.attempt,
        plan_sha256=ctx.plan_sha256,
        client_run=ctx.client_run,
        phase=request.phase,
        index=request.index,
        stream=request.stream,
        role=request.role,
        status=ex.final_status,
        response_id=state.response_id,
        finish_reason=state.finish_reason,
        http_status=ex.http_status,
        error=ex.error,
        canary=request.canary,
        prompt_sha256=request.prompt_sha256,
        wire_sha256=request.wire_sha256,
        target_input_tokens=request.target_input_tokens,
        input_tokens=request.input_tokens,
        max_tokens=request.max_tokens,
        usage=state.usage,
        wall_anchor_utc=ctx.wall_anchor_utc,
        mono_anchor_ns=ctx.mono_anchor_ns,
        due_ns=due,
        queued_ns=ex.queued_ns,
        send_ns=send,
        schedule_delay_ns=send - due if send is not None and due is not None else None,
        headers_ns=ex.headers_ns,
        first_event_ns=state.first_event_ns,
        first_output_ns=state.first_output_ns,
        first_content_ns=state.first_content_ns,
        last_token_ns=state.last_token_ns,
        usage_ns=state.usage_ns,
        done_ns=state.done_ns,
        end_ns=ex.ended_ns,
        events=state.events,
        chunk_offsets_us=[(t - send) // 1000 for t in state.chunk_ns] if send is not None else [],
        chunk_kinds="".join(state.chunk_kinds),
        chunk_stamps="".join(state.chunk_stamps),
        output_chars=len(text),
        output_words=len(text.split()),
        output_sha256=sha256_hex(text),
        output_excerpt=text[:EXCERPT_CHARS],
        reasoning_chars=state.reasoning_chars,
        contract_words=request.contract_words,
        marker_expected=request.marker,
        marker_found=(request.marker in text) if request.marker else None,
        refusal=state.refusal or _context_refusal(ex),
        step=request.step,
        rate_rps=ex.rate_rps,
        arrival_stamps=ex.arrival_stamps,
        client_receive=ctx.receive,
    )


def _context_refusal(ex: Exchange) -> bool:
    return ex.http_status == 400 and "maximum context length" in (ex.error or "")
