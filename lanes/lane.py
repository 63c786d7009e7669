"""The lane interface: what the flow and restoration need from a running recipe."""

from __future__ import annotations

from typing import Protocol

from lanes.context import LaneContext
from lanes.records import LaneExit, LaneRecord, LaneTarget
from matrix.model import Arm


class Lane(Protocol):
    """What the flow and restoration need from a running recipe, whatever runs it."""

    arm: Arm
    ctx: LaneContext

    @property
    def record(self) -> LaneRecord: ...

    def start(self) -> LaneRecord: ...

    def target(self) -> LaneTarget: ...

    def running_image(self) -> str | None: ...

    def boot_log(self) -> str: ...

    def exit_status(self) -> LaneExit | None: ...

    def stop(self, grace_s: float = ...) -> LaneExit: ...

    def remove(self) -> None: ...
