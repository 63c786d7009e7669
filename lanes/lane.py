"""The lane interface, and the ``lane.json`` bookkeeping every lane kind shares.
The same concept at another layer: ``faceoff.formats.lane``.
"""

from __future__ import annotations

from typing import Any, Protocol

from faceoff.errors import FaceoffError
from faceoff.formats.lane import LaneExit, LaneRecord, LaneTarget
from lanes.commands import binding_args
from lanes.environment import LaneEnv
from lanes.lane_context import LaneContext
from matrix.arm import Arm

GRACE_S = 30.0  # how long a stopped lane gets between SIGTERM and SIGKILL, unless told


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

    def watch(self) -> None: ...

    def note_death(self, ended: LaneExit) -> None: ...

    def stop(self, grace_s: float = ...) -> LaneExit: ...

    def remove(self) -> None: ...


class RecordedLane:
    """A lane's arm, context and ``lane.json``, rewritten as the run moves on."""

    def __init__(self, arm: Arm, ctx: LaneContext) -> None:
        self.arm = arm
        self.ctx = ctx
        self._record: LaneRecord | None = None
        self.died: LaneExit | None = None  # how the lane ended, as first observed

    @property
    def record(self) -> LaneRecord:
        if self._record is None:
            raise FaceoffError(f"lane of arm {self.arm.name!r} was never started")
        return self._record

    def target(self) -> LaneTarget:
        return self.record.target()

    def note_death(self, ended: LaneExit) -> None:
        """The lane was found dead while its process or container still ran (its API stopped
        answering): ``exit_status`` and ``stop`` report this, not the stop's own signal."""
        if self.died is None:
            self.died = ended

    def _first_record(self, env: LaneEnv, **fields: Any) -> LaneRecord:
        """Write the run's first ``lane.json``: the recipe, plus what the lane kind adds."""
        self._record = LaneRecord(
            campaign=self.ctx.campaign,
            matrix_id=self.ctx.matrix_id,
            arm=self.arm.name,
            role=self.arm.role.value,
            purpose=self.ctx.purpose.value,
            run=self.ctx.run,
            lane_kind=self.arm.lane,
            base_url=self.arm.base_url,
            gpu_ids=self.arm.gpu_ids,
            engine_args=self.arm.engine_args,
            added_args=binding_args(self.arm),
            env=env.redacted(),
            mounts=self.arm.mounts,
            **fields,
        )
        self._record.save(self.ctx.run_dir)
        return self._record

    def _update(self, **changes: Any) -> None:
        self._record = self.record.model_copy(update=changes)
        self._record.save(self.ctx.run_dir)
