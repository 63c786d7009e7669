"""The engine loop: schedule a step, wait until it would end, commit it, repeat.

Steps are laid end to end on the monotonic clock (``perf_counter_ns``): each step
starts at the previous step's deadline, not when the loop got round to it, so a
late wake-up never accumulates into drift. Tokens are handed to their requests at
the step's end. Every simulated duration is divided by ``time_scale``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from simulator.costmodel import step_cost
from simulator.gpu import VirtualGpus
from simulator.profile import Profile
from simulator.recorder import Recorder
from simulator.scheduler import Emission, Scheduler, Seq, Step
from simulator.speculation import Acceptance, acceptance_for

RESYNC_NS = 1_000_000_000  # a loop this late (real time) restarts its schedule from now


class Engine:
    def __init__(
        self,
        profile: Profile,
        recorder: Recorder,
        *,
        time_scale: float = 1.0,
        clock: Callable[[], int] = time.perf_counter_ns,
        gpus: VirtualGpus | None = None,
    ) -> None:
        self.timing = profile.timing
        self.speculative = profile.speculative
        self.scheduler = Scheduler.for_profile(profile)
        self.recorder = recorder
        self.time_scale = time_scale
        self.clock = clock
        self.gpus = gpus
        self.warm = profile.timing.jit_warmup_s == 0
        self.hung = False
        self._wake = asyncio.Event()

    def acceptance(self, reasoning_tokens: int, text_kind: str) -> Acceptance | None:
        return acceptance_for(self.speculative, reasoning_tokens, text_kind)

    def submit(self, seq: Seq) -> None:
        self.scheduler.add(seq)
        self.recorder.load(self.scheduler)
        self._wake.set()

    def abort(self, seq: Seq) -> None:
        """The client went away: free the sequence and count it as aborted."""
        if seq.status not in ("waiting", "running"):
            return
        self.scheduler.abort(seq)
        self.recorder.finished(seq, "abort", self.clock())
        self.recorder.load(self.scheduler)

    def freeze(self) -> None:
        """The hang fault: no step ever completes again."""
        self.hung = True
        self._wake.set()

    async def run(self) -> None:
        deadline: int | None = None
        while True:
            if not self.scheduler.has_work:
                if self.gpus is not None:
                    self.gpus.idle(self.clock())
                self._wake.clear()
                await self._wake.wait()
                deadline = None
            if self.hung:
                await asyncio.Event().wait()
            now = self.clock()
            start = now if deadline is None or now - deadline > RESYNC_NS else deadline
            step = self.scheduler.schedule(start)
            if step.empty:
                self._fail_head(now)
                continue
            deadline = start + self._duration_ns(step)
            if self.gpus is not None:
                self.gpus.step_started(start, step)
            await asyncio.sleep(max(deadline - self.clock(), 0) / 1e9)
            if not self.hung:
                self._commit(step, self.clock())

    def _duration_ns(self, step: Step) -> int:
        seconds = step_cost(self.timing, step)
        if self.gpus is not None:
            seconds /= self.gpus.clock_ratio  # a throttled GPU computes more slowly
        if not self.warm:
            seconds += self.timing.jit_warmup_s
            self.warm = True
        return int(seconds * 1e9 / self.time_scale)

    def _commit(self, step: Step, now: int) -> None:
        for seq, emission in self.scheduler.commit(step, now):
            self.recorder.emitted(seq, emission)
            if emission.accepted is not None:
                self.recorder.speculated(emission.accepted)
            if emission.finished:
                self.recorder.finished(seq, seq.finish_reason, now)
            seq.sink(emission)
        self.recorder.step(step, self.scheduler)

    def _fail_head(self, now: int) -> None:
        """Unreachable while profiles are valid (a request always fits an empty pool);
        if it happens anyway the head request ends as an engine error, not a spin."""
        seq = (self.scheduler.waiting or self.scheduler.running)[0]
        self.scheduler.abort(seq)
        self.recorder.finished(seq, "error", now)
        seq.sink(Emission(count=0, at_ns=now, finished=True, previous_ns=seq.last_token_ns))
