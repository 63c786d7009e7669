"""The step scheduler: what each engine step computes, in vLLM V1's order.

Per step there is a token budget (``max_num_batched_tokens``). Running sequences
come first, in arrival order: a decoding sequence takes one token (plus its draft
tokens under speculative decoding, of which ``speculation`` decides how many the
step accepts), a prefilling one takes the next chunk of its
prompt (capped by ``long_prefill_token_threshold``). Waiting sequences are then
admitted first-come-first-served while budget, ``max_num_seqs`` and KV blocks
last. When a running sequence cannot grow, the most recently admitted one is
preempted (its KV freed, recomputed later) — or, with preemption off, requests are
admitted only when their whole ``prompt + max_tokens`` fits, so nothing ever has
to be. This module has no clock and no I/O; the engine drives it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from simulator.kvcache import BlockPool, BlockTable, block_hashes
from simulator.profile import EngineSpec, Profile
from simulator.speculation import Acceptance, accepted_drafts, fresh_credits


@dataclass(frozen=True)
class Emission:
    """Tokens a sequence produced at the end of one step."""

    count: int
    at_ns: int
    finished: bool
    previous_ns: int | None  # the sequence's previous emission; None for its first token
    accepted: int | None = None  # draft tokens accepted in a speculative decode step


@dataclass(eq=False)
class Seq:
    """One request inside the engine."""

    request_id: str
    prompt: Sequence[int]
    planned: int  # tokens the request will emit in all
    max_tokens: int
    finish_reason: str
    arrival_ns: int
    sink: Callable[[Emission], None]
    hashes: list[int] = field(default_factory=list)
    table: BlockTable = field(default_factory=BlockTable)
    status: str = "waiting"  # waiting | running | finished | aborted
    computed: int = 0  # tokens whose KV is computed
    target: int = 0  # tokens to prefill: the prompt, plus outputs when recomputing
    acceptance: Acceptance | None = None  # None: no speculative decoding
    generated: int = 0
    draft_credits: list[float] = field(default_factory=list)
    preemptions: int = 0
    cached_tokens: int = 0  # prefix-cache hits at first admission
    first_scheduled_ns: int | None = None
    first_token_ns: int | None = None
    last_token_ns: int | None = None

    @property
    def prefilling(self) -> bool:
        return self.computed < self.target

    @property
    def remaining(self) -> int:
        return self.planned - self.generated


@dataclass
class Step:
    prefill: list[tuple[Seq, int, int]] = field(default_factory=list)  # (seq, start, tokens)
    decode: list[Seq] = field(default_factory=list)
    admitted: list[Seq] = field(default_factory=list)
    preempted: list[Seq] = field(default_factory=list)
    budget_used: int = 0

    @property
    def empty(self) -> bool:
        return not (self.prefill or self.decode)


@dataclass
class CacheCounters:
    queries: int = 0  # prompt tokens looked up in the prefix cache
    hits: int = 0  # of which found cached
    preemptions: int = 0


class Scheduler:
    def __init__(self, spec: EngineSpec, pool: BlockPool, draft_tokens: int = 0) -> None:
        self.spec = spec
        self.pool = pool
        self.draft_tokens = draft_tokens
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.counters = CacheCounters()
        self._decode_first_cap = 0  # set per step

    @classmethod
    def for_profile(cls, profile: Profile) -> Scheduler:
        """``profile``'s scheduler over an empty KV pool: the server's and the virtual clock's."""
        engine = profile.engine
        pool = BlockPool(
            engine.num_gpu_blocks, engine.block_size, prefix_caching=engine.enable_prefix_caching
        )
        return cls(engine, pool, profile.speculative.num_speculative_tokens)

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, seq: Seq) -> None:
        seq.hashes = block_hashes(seq.prompt, self.pool.block_size)
        seq.target = len(seq.prompt)
        self.waiting.append(seq)

    def abort(self, seq: Seq) -> None:
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self.pool.release(seq.table)
        seq.status = "aborted"

    def schedule(self, now_ns: int) -> Step:
        step = Step()
        budget = self.spec.max_num_batched_tokens
        decoding = any(not seq.prefilling for seq in self.running)
        self._decode_first_cap = self.spec.decode_first_prefill_cap if decoding else 0
        for seq in list(self.running):
            if seq.status == "running":
                budget -= self._schedule_running(seq, budget, step)
        if not step.preempted:
            self._admit(step, budget, now_ns)
        step.budget_used = self.spec.max_num_batched_tokens - budget
        return step

    def _partial_limit_reached(self, step: Step) -> bool:
        limit = self.spec.max_num_partial_prefills
        return bool(limit) and len(step.prefill) >= limit

    def _chunk(self, seq: Seq, budget: int) -> int:
        chunk = min(seq.target - seq.computed, budget)
        for cap in (self.spec.long_prefill_token_threshold, self._decode_first_cap):
            chunk = min(chunk, cap) if cap else chunk
        return chunk

    def _schedule_running(self, seq: Seq, budget: int, step: Step) -> int:
        if seq.prefilling:
            if self._partial_limit_reached(step):
                return 0
            tokens = self._chunk(seq, budget)
        else:
            tokens = 1 + self.draft_tokens
            if tokens > budget:
                return 0
        if tokens <= 0 or not self._grow_or_preempt(seq, seq.computed + tokens, step):
            return 0
        if seq.prefilling:
            step.prefill.append((seq, seq.computed, tokens))
        else:
            step.decode.append(seq)
        return tokens

    def _grow_or_preempt(self, seq: Seq, tokens: int, step: Step) -> bool:
        while not self.pool.grow(seq.table, tokens):
            victim = self.running[-1]
            self._preempt(victim, step)
            if victim is seq:
                return False
        return True

    def _preempt(self, seq: Seq, step: Step) -> None:
        self.running.remove(seq)
        self.pool.release(seq.table)
        seq.computed = 0
        seq.target = len(seq.prompt) + seq.generated
        seq.preemptions += 1
        seq.status = "waiting"
        self.counters.preemptions += 1
        self.waiting.appendleft(seq)
        step.preempted.append(seq)

    def _admit(self, step: Step, budget: int, now_ns: int) -> None:
        while self.waiting and budget > 0 and len(self.running) < self.spec.max_num_seqs:
            if self._partial_limit_reached(step):
                return
            seq = self.waiting[0]
            tokens = self._try_allocate(seq, budget)
            if tokens == 0:
                return  # first come, first served: the head blocks the queue
            self.waiting.popleft()
            self.running.append(seq)
            seq.status = "running"
            if seq.first_scheduled_ns is None:
                # A step is planned at its start; a request that arrived while the
                # previous step ran must not get a queue time below zero.
                seq.first_scheduled_ns = max(now_ns, seq.arrival_ns)
            step.admitted.append(seq)
            step.prefill.append((seq, seq.computed, tokens))
            budget -= tokens

    def _try_allocate(self, seq: Seq, budget: int) -> int:
        """Take cached prefix blocks and room for the first chunk; 0 when it does not fit."""
        usable = (len(seq.prompt) - 1) // self.pool.block_size  # one token is always computed
        hits = min(self.pool.cached_prefix(seq.hashes), usable)
        self.pool.hold_cached(seq.table, seq.hashes[:hits])
        seq.computed = hits * self.pool.block_size
        tokens = self._chunk(seq, budget)
        need = seq.computed + tokens
        if not self.spec.preemption:
            need = max(need, seq.target + seq.max_tokens - seq.generated)
        if tokens <= 0 or not self.pool.grow(seq.table, need):
            self.pool.release(seq.table)
            seq.computed = 0
            return 0
        self.counters.queries += len(seq.prompt)
        self.counters.hits += seq.computed
        if seq.first_scheduled_ns is None:
            seq.cached_tokens = seq.computed
        return tokens

    def commit(self, step: Step, now_ns: int) -> list[tuple[Seq, Emission]]:
        """Apply a finished step: advance prefills and decodes, emit and retire tokens."""
        out: list[tuple[Seq, Emission]] = []
        for seq, _start, tokens in step.prefill:
            if seq.status != "running":
                continue
            seq.computed += tokens
            self._promote_full_blocks(seq)
            if not seq.prefilling:
                out.append((seq, self._emit(seq, 1, now_ns)))
        for seq in step.decode:
            if seq.status != "running":
                continue
            accepted = self._verify(seq)
            count = min(1 + (accepted or 0), seq.remaining)
            seq.computed += count
            out.append((seq, self._emit(seq, count, now_ns, accepted)))
        return out

    def _verify(self, seq: Seq) -> int | None:
        """Draft tokens the target model accepts in this step; None without speculation."""
        if seq.acceptance is None or not self.draft_tokens:
            return None
        if not seq.draft_credits:
            seq.draft_credits = fresh_credits(self.draft_tokens)
        return accepted_drafts(seq.draft_credits, seq.acceptance.at(seq.generated))

    def _promote_full_blocks(self, seq: Seq) -> None:
        if not self.pool.prefix_caching:
            return
        done = min(seq.computed, len(seq.prompt)) // self.pool.block_size
        while len(seq.table.shared) < done and seq.table.private > 0:
            self.pool.promote(seq.table, seq.hashes[len(seq.table.shared)])

    def _emit(self, seq: Seq, count: int, now_ns: int, accepted: int | None = None) -> Emission:
        previous = seq.last_token_ns
        seq.generated += count
        if seq.first_token_ns is None:
            seq.first_token_ns = now_ns
        seq.last_token_ns = now_ns
        finished = seq.remaining <= 0
        if finished:
            seq.status = "finished"
            self.running.remove(seq)
            self.pool.release(seq.table)
        return Emission(
            count=count, at_ns=now_ns, finished=finished, previous_ns=previous, accepted=accepted
        )
