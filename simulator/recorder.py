"""What the engine tells its Prometheus families, step by step and request by request.

vLLM counts a request's prompt tokens once, when its first token is produced, and
its output tokens as they are produced, so after a drained run the counters equal
the sums of ``usage`` the clients received.
"""

from __future__ import annotations

import dataclasses

from simulator.metrics import Families
from simulator.scheduler import CacheCounters, Emission, Scheduler, Seq, Step

NS = 1e9


class Recorder:
    def __init__(self, families: Families, draft_tokens: int = 0) -> None:
        self.f = families
        self.draft_tokens = draft_tokens
        self._seen = CacheCounters()  # scheduler totals already added to the counters

    def load(self, scheduler: Scheduler) -> None:
        self.f.running.set(len(scheduler.running))
        self.f.waiting.set(len(scheduler.waiting))
        self.f.waiting_by_reason["capacity"].set(len(scheduler.waiting))
        self.f.kv_usage.set(scheduler.pool.usage)

    def step(self, step: Step, scheduler: Scheduler) -> None:
        self.f.h_iteration.observe(step.budget_used)
        now, seen = scheduler.counters, self._seen
        self.f.prefix_queries.inc(now.queries - seen.queries)
        self.f.prefix_hits.inc(now.hits - seen.hits)
        self.f.preemptions.inc(now.preemptions - seen.preemptions)
        self._seen = dataclasses.replace(now)
        self.load(scheduler)

    def emitted(self, seq: Seq, emission: Emission) -> None:
        if emission.previous_ns is None:
            self._first_token(seq, emission.at_ns)
        else:
            self.f.h_itl.observe((emission.at_ns - emission.previous_ns) / NS)
        self.f.generation_tokens.inc(emission.count)

    def _first_token(self, seq: Seq, at_ns: int) -> None:
        prompt, cached = len(seq.prompt), seq.cached_tokens
        self.f.prompt_tokens.inc(prompt)
        self.f.prompt_by_source["local_compute"].inc(prompt - cached)
        self.f.prompt_by_source["local_cache_hit"].inc(cached)
        self.f.prompt_cached.inc(cached)
        self.f.cached_by_source["device"].inc(cached)
        self.f.h_ttft.observe((at_ns - seq.arrival_ns) / NS)

    def speculated(self, accepted: int) -> None:
        """One decode step of one sequence under speculative decoding: one draft of
        ``draft_tokens`` tokens, its first ``accepted`` accepted (vLLM's observe_draft)."""
        if not self.draft_tokens:
            return
        self.f.drafts.inc()
        self.f.draft_tokens.inc(self.draft_tokens)
        self.f.accepted.inc(accepted)
        for position in range(min(accepted, self.draft_tokens)):
            self.f.accepted_per_pos[str(position)].inc()

    def finished(self, seq: Seq, reason: str, end_ns: int) -> None:
        self.f.success[reason].inc()
        scheduled = seq.first_scheduled_ns or end_ns
        first = seq.first_token_ns or end_ns
        last = seq.last_token_ns or end_ns
        self.f.h_e2e.observe((end_ns - seq.arrival_ns) / NS)
        self.f.h_queue.observe((scheduled - seq.arrival_ns) / NS)
        self.f.h_prefill.observe((first - scheduled) / NS)
        self.f.h_decode.observe((last - first) / NS)
        self.f.h_inference.observe((last - scheduled) / NS)
        tpot = (last - first) / NS / (seq.generated - 1) if seq.generated > 1 else 0.0
        self.f.h_tpot.observe(tpot)
        self.f.h_prompt.observe(len(seq.prompt))
        self.f.h_generation.observe(seq.generated)
        self.f.h_max_generation.observe(seq.max_tokens)
        self.f.h_max_tokens.observe(seq.max_tokens)
        self.f.h_n.observe(1)
        self.f.h_preemptions.observe(seq.preemptions)
        self.f.h_kv_computed.observe(len(seq.prompt) - seq.cached_tokens)
