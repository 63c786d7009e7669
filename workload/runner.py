"""Run a request plan: C closed-loop streams that start together, or an open-loop schedule.

Each phase (warmups, then the scored or diagnostic requests) starts at one aligned
instant; a stream sends its next request the moment its previous one ends. An
open-loop plan's scored requests are instead each a task started at its due time
(its step's start plus its seeded arrival divided by the step's rate), whether or not
earlier ones have ended, with at most the cell's concurrency in flight; a sweep's
steps run one after another, each starting when the previous one has drained, and a
bisection picks each step's rate from the SLO results of the steps before it. A stop
(cell deadline or SIGTERM) cancels the requests in flight, and every planned request
still gets exactly one journal line: in-flight ones as cancelled with what they had
received, unsent ones as cancelled and never sent.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from dataclasses import dataclass, field

import aiohttp

from faceoff.canonical import sha256_hex
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase, RequestOutcome, Status
from faceoff.formats.attempt.request_plan import OpenLoad, PlannedRequest, RequestPlan
from workload.client import READ_BUFFER, Clock, Exchange, RunContext, outcome_of, timed_exchange
from workload.journal import JournalWriter
from workload.ladder import StepResult, next_rate, within_slo
from workload.request import Body
from workload.rx_stamps import set_receive
from workload.transport import timed_session

START_LEAD_NS = 20_000_000  # streams are created, then all start at one instant this far ahead


@dataclass
class Stop:
    """Stops a run from outside (deadline timer, signal handler) and says why."""

    task: asyncio.Task[object] | None = None
    reason: str | None = None

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            if self.task is not None:
                self.task.cancel()


@dataclass
class RunReport:
    statuses: Counter[str] = field(default_factory=Counter)  # journal lines by status
    stopped_by: str | None = None
    prewarm_error: str | None = None

    @property
    def journaled(self) -> int:
        return self.statuses.total()


def open_session(clock: Clock) -> aiohttp.ClientSession:
    return timed_session(
        clock,
        read_bufsize=READ_BUFFER,
        timeout=aiohttp.ClientTimeout(total=None),
        auto_decompress=False,
    )


def verified_bodies(plan: RequestPlan) -> dict[tuple[Phase, int], bytes]:
    """Every request body, checked against the hash the plan recorded."""
    bodies = {}
    for request in plan.requests:
        body = Body.of(request).wire(plan.model)
        if sha256_hex(body) != request.wire_sha256:
            raise FaceoffError(
                f"{request.phase.value} request {request.index}: body sha256 differs from the "
                "plan's wire_sha256",
                where=f"requests.json of cell {plan.cell.id}",
                fix="rebuild the plan; requests.json must never be edited",
            )
        bodies[(request.phase, request.index)] = body
    return bodies


class CellRunner:
    def __init__(
        self,
        plan: RequestPlan,
        base_url: str,
        context: RunContext,
        clock: Clock,
    ) -> None:
        self.plan, self.context, self.clock = plan, context, clock
        self.base_url = base_url.rstrip("/")
        self.bodies = verified_bodies(plan)
        self.started: set[tuple[Phase, int]] = set()
        self.report = RunReport()
        self.stop = Stop()
        self.journal: JournalWriter | None = None
        self.last: Exchange | None = None  # the latest request journaled

    async def run(self, journal: JournalWriter, cell_deadline_s: float) -> RunReport:
        """Send every planned request, unless stopped; journal one line per request. The
        loop sleeps or spins while requests are in flight, as the run's context says."""
        set_receive(asyncio.get_running_loop(), self.clock, self.context.receive)
        self.journal = journal
        self.stop.task = asyncio.current_task()
        timer = asyncio.get_running_loop().call_later(
            cell_deadline_s, self.stop.stop, f"cell deadline of {cell_deadline_s} s reached"
        )
        try:
            async with open_session(self.clock) as session:
                await self._prewarm(session)
                for phase in dict.fromkeys(r.phase for r in self.plan.requests):
                    await self._phase(session, self.plan.phase(phase))
        except asyncio.CancelledError:
            if self.stop.reason is None:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        except Exception as exc:  # a client fault: the journal still gets every line
            self.stop.reason = self.stop.reason or f"client error: {_described(exc)}"
            raise
        finally:
            timer.cancel()
            self._journal_unsent()
        self.report.stopped_by = self.stop.reason
        return self.report

    async def _prewarm(self, session: aiohttp.ClientSession) -> None:
        """One keep-alive connection per stream, so no request pays for a TCP handshake."""

        async def touch() -> None:
            async with session.get(self.base_url + "/health") as resp:
                await resp.read()

        try:
            await asyncio.gather(*(touch() for _ in range(self.plan.cell.concurrency)))
        except (aiohttp.ClientError, OSError) as exc:
            self.report.prewarm_error = f"{type(exc).__name__}: {exc}"

    async def _phase(self, session: aiohttp.ClientSession, requests: list[PlannedRequest]) -> None:
        load = self.plan.load
        if load is not None and requests[0].phase is not Phase.WARMUP:
            await self._open_loop(session, requests, load)
            return
        streams: dict[int, list[PlannedRequest]] = {}
        for request in sorted(requests, key=lambda r: (r.stream, r.order)):
            streams.setdefault(request.stream, []).append(request)
        start_ns = self.clock() + START_LEAD_NS
        async with asyncio.TaskGroup() as group:
            for stream in streams.values():
                group.create_task(self._stream(session, stream, start_ns))

    async def _stream(
        self, session: aiohttp.ClientSession, requests: list[PlannedRequest], start_ns: int
    ) -> None:
        due_ns = start_ns + requests[0].start_offset_ms * 1_000_000
        await asyncio.sleep(max(0, due_ns - self.clock()) / 1e9)
        for request in requests:
            due_ns = (await self._send(session, request, due_ns)).ended_ns

    async def _open_loop(
        self, session: aiohttp.ClientSession, requests: list[PlannedRequest], load: OpenLoad
    ) -> None:
        gate = asyncio.Semaphore(load.max_in_flight)
        done: list[StepResult] = []
        for step in range(load.steps):
            batch = sorted((r for r in requests if r.step == step), key=lambda r: r.arrival_s or 0)
            rate = load.rate if load.sweep is None else next_rate(load.sweep, done)
            assert rate is not None, "an open load has a rate or a sweep"
            outcomes = await self._step(session, batch, rate, gate)
            done.append(StepResult(rate, within_slo(load, outcomes, len(batch))))

    async def _step(
        self,
        session: aiohttp.ClientSession,
        batch: list[PlannedRequest],
        rate: float,
        gate: asyncio.Semaphore,
    ) -> list[RequestOutcome]:
        """One open-loop run at ``rate``: each request a task started when it is due; its
        lines, made once the step has drained (nothing is being read then)."""
        start_ns = self.clock() + START_LEAD_NS
        exchanges: list[Exchange] = []

        async def arrive(request: PlannedRequest, due_ns: int) -> None:
            async with gate:  # a wait here is schedule lag: the bound on requests in flight
                exchanges.append(await self._send(session, request, due_ns, rate))

        async with asyncio.TaskGroup() as group:
            for request in batch:
                due_ns = start_ns + round((request.arrival_s or 0) / rate * 1e9)
                await asyncio.sleep(max(0, due_ns - self.clock()) / 1e9)
                group.create_task(arrive(request, due_ns))
        return [outcome_of(self.context, ex) for ex in exchanges]

    async def _send(
        self,
        session: aiohttp.ClientSession,
        request: PlannedRequest,
        due_ns: int,
        rate_rps: float | None = None,
    ) -> Exchange:
        """One request, journaled; a closed loop's next request is due when it ended."""
        ex = Exchange(request, due_ns, rate_rps=rate_rps)
        self.started.add((request.phase, request.index))
        url = self.base_url + "/v1/chat/completions"
        body = self.bodies[(request.phase, request.index)]
        deadline = self.plan.cell.request_deadline_s
        try:
            await timed_exchange(session, url, body, ex, clock=self.clock, deadline_s=deadline)
        except asyncio.CancelledError:
            if ex.status is None:
                ex.fail(Status.CANCELLED, f"cancelled in flight: {self.stop.reason or 'cancel'}")
            raise
        except Exception as exc:  # a fault of the client fails this request, not the cell run
            ex.fail(Status.STREAM_ERROR, f"client error: {_described(exc)}")
        finally:
            self._journal(ex)
        return ex

    def _journal_unsent(self) -> None:
        for request in self.plan.requests:
            if (request.phase, request.index) not in self.started:
                ex = Exchange(request, due_ns=None, end_ns=self.clock())
                ex.fail(Status.CANCELLED, f"never sent: {self.stop.reason or 'run ended'}")
                self._journal(ex)

    def _journal(self, ex: Exchange) -> None:
        """Hand the ended exchange to the journal's thread, which makes its line: nothing
        but a queue put stands between a request's end and the stream's next send."""
        assert self.journal is not None, "run() sets the journal"
        self.journal.submit(functools.partial(outcome_of, self.context, ex))
        self.report.statuses[ex.final_status.value] += 1
        self.last = ex


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
