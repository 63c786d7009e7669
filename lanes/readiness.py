"""Readiness: ``/health`` answers 200, then ``/v1/models`` lists models, within the deadline.

A lane that exits while booting is not waited for: the verdict says how it ended
and quotes the end of its boot log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faceoff.formats.lane import Readiness, ServedModel
from faceoff.ports import Clock
from faceoff.result import Maybe
from lanes.bootlog import tail
from lanes.http import Http, HttpReply
from lanes.lane import Lane

REQUEST_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Waiting:
    """Clocks of a readiness wait, injectable so tests need not sleep."""

    now: Clock
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def wait_ready(lane: Lane, http: Http, waiting: Waiting) -> Readiness:
    arm = lane.arm
    base = lane.record.base_url
    started = waiting.monotonic()
    deadline = started + arm.startup_deadline_s

    def poll(path: str, accept: Callable[[HttpReply], bool]) -> Maybe[HttpReply]:
        return _poll(lane, http, waiting, f"{base}{path}", accept=accept, deadline=deadline)

    health = poll("/health", lambda r: r.ok)
    if health.value is None:
        return Readiness(ready=False, reason=health.reason)
    health_after = waiting.monotonic() - started
    models = poll("/v1/models", lambda r: r.ok and bool(parse_models(r)))
    if models.value is None:
        return Readiness(ready=False, reason=models.reason, health_after_s=health_after)
    return Readiness(
        ready=True,
        health_after_s=health_after,
        models_after_s=waiting.monotonic() - started,
        models=parse_models(models.value),
        ready_at=waiting.now(),
    )


def parse_models(reply: HttpReply) -> list[ServedModel]:
    """The ``data`` list of an OpenAI ``/v1/models`` answer; empty when it is not one."""
    try:
        data: Any = reply.json().get("data")
        return [ServedModel(id=str(m["id"]), root=m.get("root")) for m in data]
    except (ValueError, AttributeError, KeyError, TypeError):
        return []


def _poll(
    lane: Lane,
    http: Http,
    waiting: Waiting,
    url: str,
    *,
    accept: Callable[[HttpReply], bool],
    deadline: float,
) -> Maybe[HttpReply]:
    """The first accepted reply, or a sentence saying why none came."""
    last = "no attempt"
    while True:
        ended = lane.exit_status()
        if ended is not None:
            return Maybe.lacking(
                f"the lane exited before it was ready: {ended.sentence}; "
                f"boot log ends:\n{tail(lane.boot_log())}"
            )
        remaining = deadline - waiting.monotonic()
        if remaining <= 0:
            return Maybe.lacking(
                f"{url} was not ready within the startup deadline of "
                f"{lane.arm.startup_deadline_s:g} s (last: {last})"
            )
        reply = http.get(url, timeout=min(REQUEST_TIMEOUT_S, max(remaining, 0.1)))
        if accept(reply):
            return Maybe.of(reply)
        last = reply.describe()
        waiting.sleep(min(lane.arm.probes.poll_interval_s, max(remaining, 0.0)))
