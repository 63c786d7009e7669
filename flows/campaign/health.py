"""Whether a campaign's incumbent answers now: one ``GET /v1/models`` on its own port.

A valid receipt proves that the incumbent came back when restoration ended; it does not
prove that it still serves. ``faceoff restore`` and ``faceoff status`` ask the engine
itself: it answers when ``/v1/models`` lists the arm's served model.
"""

from __future__ import annotations

from dataclasses import dataclass

from lanes.http import Http
from lanes.probes import PROBE_TIMEOUT_S
from lanes.readiness import parse_models
from matrix.arm import Arm


@dataclass(frozen=True)
class IncumbentHealth:
    arm: str
    url: str
    answering: bool
    detail: str  # what it serves, or how it failed to answer

    @property
    def word(self) -> str:
        return "answering" if self.answering else "not answering"

    @property
    def line(self) -> str:
        return f"incumbent {self.arm} at {self.url}: {self.word} ({self.detail})"


def probe_incumbent(arm: Arm, http: Http, timeout_s: float = PROBE_TIMEOUT_S) -> IncumbentHealth:
    url = f"{arm.base_url}/v1/models"
    reply = http.get(url, timeout=timeout_s)
    if not reply.ok:
        return IncumbentHealth(arm.name, arm.base_url, False, reply.describe())
    served = [m.id for m in parse_models(reply)]
    if arm.served_model in served:
        return IncumbentHealth(arm.name, arm.base_url, True, f"serves {arm.served_model}")
    found = ", ".join(served) or "no model"
    return IncumbentHealth(arm.name, arm.base_url, False, f"serves {found}, not {arm.served_model}")
