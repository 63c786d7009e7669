"""Injected faults: the profile's ``[faults]``, ``--fault k=v``, and ``POST /_sim/faults``.

Each fault is something a client (or a lane, or a collector) can observe:

- ``crash_after_requests=N``: generation request N+1 finds the process exiting with
  ``crash_exit_code`` (its connection drops); ``oom_after_requests=N`` does the same
  with SIGKILL, so Docker reports exit code 137 as for an OOM kill;
- ``hang_after_requests=N``: request N+1 freezes the engine and every endpoint;
- ``metrics_delay_s``, ``metrics_status``, ``missing_families``, ``metrics_garbage``: a
  slow, failing, incomplete or unparsable ``/metrics`` (200 with bytes that are not
  Prometheus text);
- ``tokenize_delay_s``: every ``/tokenize`` answers that many (real) seconds late, as a
  lane across a network or a busy tokenizer does (plan building counts its round trips);
- ``error_rate`` (drawn from ``seed``): requests answered with ``error_status``;
- ``refuse_above_tokens``: a 400 for prompts longer than that;
- ``contract_overrun``: "exactly N words" is ignored and output runs to max_tokens;
- ``needle_miss_above_tokens``: a needle prompt longer than that recalls a garbled marker
  (it lowers the profile's ``output.needle_verified_tokens``);
- ``health_status``: what ``/health`` answers once the engine is ready (503: an engine that
  serves ``/v1/models`` but reports itself unhealthy).

An engine flag problem needs no fault: ``--max-model-len N`` (vLLM's flag) lowers the
profile's context, and the simulator refuses a longer request as vLLM does.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from simulator.profile import FaultSpec, ProfileError, build_section, to_toml_value


class FaultState:
    """The live fault settings and the counters they trigger on."""

    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec
        self.arrivals = 0  # generation requests received
        self.hung = False
        self._rng = random.Random(spec.seed)

    def arrival(self) -> str | None:
        """Count a generation request; name the fatal fault it triggers, if any."""
        self.arrivals += 1
        past = self.arrivals - 1
        for fault in ("oom", "crash", "hang"):
            after = getattr(self.spec, f"{fault}_after_requests")
            if after and past >= after:
                return fault
        return None

    def error_status(self) -> int | None:
        rate = self.spec.error_rate
        return self.spec.error_status if rate and self._rng.random() < rate else None

    def refuses(self, prompt_tokens: int) -> bool:
        limit = self.spec.refuse_above_tokens
        return bool(limit) and prompt_tokens > limit

    def update(self, changes: Any) -> FaultSpec:
        """Merge ``changes`` (a JSON object of fault keys) into the live settings."""
        if not isinstance(changes, dict):
            raise ProfileError("POST /_sim/faults: expected a JSON object of fault settings")
        current = {k: to_toml_value(v) for k, v in dataclasses.asdict(self.spec).items()}
        spec: FaultSpec = build_section(FaultSpec, {**current, **changes}, "POST /_sim/faults")
        if spec.seed != self.spec.seed:
            self._rng = random.Random(spec.seed)
        self.spec = spec
        return spec

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self.spec), "arrivals": self.arrivals, "hung": self.hung}
