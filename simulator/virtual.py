"""The scheduler and cost model on a virtual clock: what a cell would measure, instantly.

The same ``Scheduler`` and ``step_cost`` the server runs, driven without sleeping:
time jumps from step end to step end. ``closed_loop`` plays a cell the way the
workload client sends it (``concurrency`` clients, each sending its next request
when its previous one ends) and returns per-request times as a client would see
them, minus the network. Calibration benchmarks and deterministic scheduler tests
use it; the HTTP tests check that the live server keeps the same schedule.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from simulator.costmodel import step_cost
from simulator.profile import Profile
from simulator.scheduler import Emission, Scheduler, Seq
from simulator.speculation import acceptance_for

NS = 1_000_000_000


@dataclass(frozen=True)
class Job:
    """One request: its prompt length and the output the model would give."""

    prompt_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    text_kind: str = "prose"
    shared_prefix: int = 0  # leading tokens shared with every other job (0 = nonce first)


@dataclass
class Timing:
    """Seconds since the cell started."""

    index: int
    sent: float
    first_output: float | None = None
    first_content: float | None = None
    end: float | None = None
    tokens: int = 0
    emissions: list[float] = field(default_factory=list)  # step ends that yielded tokens

    @property
    def ttfo(self) -> float:
        """Seconds from sending to the first output token (reasoning or visible)."""
        return self._since(self.first_output)

    @property
    def ttft(self) -> float:
        """Seconds from sending to the first visible token."""
        return self._since(self.first_content)

    @property
    def e2e(self) -> float:
        return self._since(self.end)

    @property
    def decode_rate(self) -> float:
        return (self.tokens - 1) / (self.e2e - self.ttfo)

    def _since(self, moment: float | None) -> float:
        if moment is None:
            raise ValueError(f"request {self.index} did not get that far")
        return moment - self.sent


@dataclass
class Run:
    timings: list[Timing] = field(default_factory=list)
    peak_running: int = 0
    peak_waiting: int = 0
    peak_kv_usage: float = 0.0
    preemptions: int = 0
    prefix_hits: int = 0
    elapsed: float = 0.0


def prompt_of(job: Job, index: int) -> list[int]:
    shared = [7] * job.shared_prefix
    return shared + [1_000_000 + index] + [0] * (job.prompt_tokens - job.shared_prefix - 1)


class VirtualEngine:
    def __init__(self, profile: Profile, *, warm: bool = True) -> None:
        self.profile = profile
        self.scheduler = Scheduler.for_profile(profile)
        self.warmup = 0.0 if warm else profile.timing.jit_warmup_s
        self.now = 0.0
        self.run = Run()

    def submit(self, job: Job, index: int, sent: float | None = None) -> Seq:
        """Hand a job to the scheduler; ``sent`` (default now) may lie inside the last step."""
        timing = Timing(index=index, sent=self.now if sent is None else sent)
        self.run.timings.append(timing)
        seq = Seq(
            request_id=str(index),
            prompt=prompt_of(job, index),
            planned=job.output_tokens,
            max_tokens=job.output_tokens,
            acceptance=acceptance_for(
                self.profile.speculative, job.reasoning_tokens, job.text_kind
            ),
            finish_reason="stop",
            arrival_ns=int(timing.sent * NS),
            sink=lambda emission: self._record(timing, job, emission),
        )
        self.scheduler.add(seq)
        return seq

    def _record(self, timing: Timing, job: Job, emission: Emission) -> None:
        before = timing.tokens
        timing.tokens += emission.count
        timing.emissions.append(self.now)
        if before == 0:
            timing.first_output = self.now
        if before <= job.reasoning_tokens < timing.tokens:
            timing.first_content = self.now
        if emission.finished:
            timing.end = self.now

    def step(self) -> list[Seq]:
        """Run one step; returns the sequences that finished in it."""
        step = self.scheduler.schedule(int(self.now * NS))
        self.now += step_cost(self.profile.timing, step) + self.warmup
        self.warmup = 0.0
        done = []
        for seq, emission in self.scheduler.commit(step, int(self.now * NS)):
            seq.sink(emission)
            if emission.finished:
                done.append(seq)
        self._observe()
        return done

    def _observe(self) -> None:
        run, scheduler = self.run, self.scheduler
        run.peak_running = max(run.peak_running, len(scheduler.running))
        run.peak_waiting = max(run.peak_waiting, len(scheduler.waiting))
        run.peak_kv_usage = max(run.peak_kv_usage, scheduler.pool.usage)
        run.preemptions = scheduler.counters.preemptions
        run.prefix_hits = scheduler.counters.hits
        run.elapsed = self.now


def closed_loop(profile: Profile, jobs: list[Job], concurrency: int, *, warm: bool = True) -> Run:
    """``concurrency`` clients send ``jobs`` in order, each after its previous one ends."""
    engine = VirtualEngine(profile, warm=warm)
    queue = deque(enumerate(jobs))
    for _ in range(min(concurrency, len(jobs))):
        index, job = queue.popleft()
        engine.submit(job, index)
    while engine.scheduler.has_work:
        for _seq in engine.step():
            if queue:
                index, job = queue.popleft()
                engine.submit(job, index)
    return engine.run


def open_loop(profile: Profile, arrivals: list[tuple[float, Job]], *, warm: bool = True) -> Run:
    """Each job is sent at its own time (seconds); ``timings`` come back in job order."""
    engine = VirtualEngine(profile, warm=warm)
    pending = deque(sorted(enumerate(arrivals), key=lambda item: item[1][0]))
    while pending or engine.scheduler.has_work:
        while pending and pending[0][1][0] <= engine.now:
            index, (at, job) = pending.popleft()
            engine.submit(job, index, sent=at)
        if engine.scheduler.has_work:
            engine.step()
        elif pending:
            engine.now = pending[0][1][0]
    engine.run.timings.sort(key=lambda timing: timing.index)
    return engine.run
