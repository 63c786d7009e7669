"""A lane in a Docker container: pinned digest, host network and IPC, GPUs by id.

The container is created from ``repo@sha256:…`` (pulled by that digest only when
the local store lacks it), labelled so that a later process can find it by
campaign, arm and purpose, and checked after start: the image it runs must carry
the pinned digest.
"""

from __future__ import annotations

import contextlib
import signal
from datetime import datetime
from typing import Any

import docker.errors
from docker.types import DeviceRequest
from docker.types import Mount as DockerMount

from faceoff.errors import FaceoffError
from faceoff.formats.lane import SIGNAL_EXIT_BASE, InspectRecord, LaneExit, LaneRecord
from faceoff.ports import DockerClient, DockerContainer, container_id
from lanes.bootlog import write_boot_log
from lanes.commands import container_command
from lanes.environment import LaneEnv
from lanes.images import ImageCheck, PinnedImage, check_running_image, local_or_pull, parse_pinned
from lanes.lane import GRACE_S, RecordedLane
from lanes.lane_context import LaneContext
from matrix.arm import Arm

STOPPED_STATES = ("exited", "dead")


class DockerLane(RecordedLane):
    """One container run of an arm; records under ``ctx.run_dir``."""

    def __init__(self, arm: Arm, ctx: LaneContext, client: DockerClient, env: LaneEnv) -> None:
        super().__init__(arm, ctx)
        self.client = client
        self.env = env
        self.pinned = parse_pinned(arm.image or "", where=f"arms[{arm.name}].image")
        self._created: DockerContainer | None = None

    def create(self) -> LaneRecord:
        """Create the container, not started, from the pinned digest (pulled if not local)."""
        image = local_or_pull(self.client, self.pinned, where=f"arms[{self.arm.name}].image")
        kwargs = container_kwargs(self.arm, self.ctx, self.env, self.pinned)
        try:
            self._created = self.client.containers.create(**kwargs)
        except docker.errors.APIError as exc:
            raise FaceoffError(
                f"Docker refused to create the lane: {exc.explanation or exc}",
                where=f"arms[{self.arm.name}]",
                fix="check the mounts' host paths, memory_limit and shm_size",
            ) from exc
        record = self._first_record(
            self.env,
            state="created",
            image=self.pinned.ref,
            image_id=image.id,
            container_id=self._created.id,
            container_name=str(kwargs["name"]),
            command=kwargs["command"],
            memory_limit=self.arm.memory_limit,
            shm_size=self.arm.shm_size,
            created_at=self.ctx.now(),
        )
        self._save_inspect()
        return record

    def start(self) -> LaneRecord:
        """Create if needed, start, and verify the running image against the pinned digest."""
        if self._created is None:
            self.create()
        self._container.start()
        self._container.reload()
        check = self._check_image()
        self._update(
            state="running",
            started_at=self.ctx.now(),
            pid=self._container.attrs["State"].get("Pid") or None,
            running_image=check.running,
            image_verified=check.verified,
        )
        self._save_inspect()
        return self.record

    def running_image(self) -> str | None:
        return self.record.running_image

    def boot_log(self) -> str:
        """Everything the container printed so far, redacted; also written to ``boot.log``."""
        try:
            raw = self._container.logs(stdout=True, stderr=True)
        except docker.errors.NotFound:
            return ""
        return write_boot_log(self.ctx.run_dir, raw.decode("utf-8", "replace"), self.env)

    def exit_status(self) -> LaneExit | None:
        """None while the container runs; how it ended once it has, as first observed."""
        if self.died is not None:
            return self.died
        try:
            self._container.reload()
        except docker.errors.NotFound:
            return LaneExit(exit_code=None, detail="the container was removed by someone else")
        self.died = exit_from_state(self._container.attrs["State"])
        return self.died

    def watch(self) -> None:
        """Nothing to remember: the container's state says whether it ended."""

    def stop(self, grace_s: float = GRACE_S) -> LaneExit:
        """SIGTERM, then SIGKILL after ``grace_s``; records the exit, boot log and inspect.
        A lane already found dead keeps that exit, not the stop's."""
        if self.record.state == "created":
            ended = LaneExit(exit_code=None, detail="created, never started")
        else:
            ended_before = self.exit_status()
            with contextlib.suppress(docker.errors.NotFound):
                self._container.stop(timeout=max(1, round(grace_s)))
            running = LaneExit(exit_code=None, detail="running after stop")
            ended = ended_before or self.exit_status() or running
        self.boot_log()
        self._save_inspect()
        self._update(state="stopped", stopped_at=self.ctx.now(), exit=ended)
        return ended

    def remove(self) -> None:
        """Remove the container (stopping it first if it still runs)."""
        if self._created is None or self.record.state == "removed":
            return
        if self.record.state != "stopped":
            self.stop()
        with contextlib.suppress(docker.errors.NotFound):
            self._container.remove(force=True)
        self._update(state="removed")

    @property
    def _container(self) -> DockerContainer:
        if self._created is None:
            raise FaceoffError(f"lane of arm {self.arm.name!r} was never created")
        return self._created

    def _check_image(self) -> ImageCheck:
        running = self.client.images.get(self._container.attrs["Image"])
        return check_running_image(self.pinned, running.attrs)

    def _save_inspect(self) -> None:
        try:
            self._container.reload()
        except docker.errors.NotFound:
            return
        InspectRecord(
            container_id=container_id(self._container),
            taken_at=self.ctx.now(),
            inspect=self.env.scrub(self._container.attrs),
        ).save(self.ctx.run_dir)


def container_kwargs(
    arm: Arm, ctx: LaneContext, env: LaneEnv, pinned: PinnedImage
) -> dict[str, Any]:
    """Arguments of ``containers.create`` for this arm: the recipe, nothing from the host."""
    kwargs: dict[str, Any] = {
        "image": pinned.ref,
        "command": container_command(arm),
        "name": f"faceoff-{ctx.campaign}-{arm.name}-{ctx.run}",
        "environment": env.values,
        "labels": ctx.labels(arm),
        "network_mode": "host",
        "ipc_mode": "host",
        "mounts": [
            DockerMount(target=m.target, source=m.source, type="bind", read_only=m.read_only)
            for m in arm.mounts
        ],
    }
    if arm.gpu_ids and arm.simulator is None:  # a simulator's GPUs are virtual
        kwargs["device_requests"] = [
            DeviceRequest(device_ids=[str(i) for i in arm.gpu_ids], capabilities=[["gpu"]])
        ]
    if arm.memory_limit is not None:
        kwargs["mem_limit"] = arm.memory_limit
    if arm.shm_size is not None:
        kwargs["shm_size"] = arm.shm_size
    return kwargs


def exit_from_state(state: dict[str, Any]) -> LaneExit | None:
    """How a container ended, from its inspect ``State``; None while it runs.

    ``OOMKilled`` is the daemon's word on an OOM kill; an exit of 137 alone is any SIGKILL.
    """
    if state.get("Status") not in STOPPED_STATES:
        return None
    code = state.get("ExitCode")
    sig = code - SIGNAL_EXIT_BASE if isinstance(code, int) and code > SIGNAL_EXIT_BASE else None
    how = f"ended by {signal.Signals(sig).name}" if sig in signal.valid_signals() else None
    oom = "OOM-killed (Docker's OOMKilled)" if state.get("OOMKilled") else None
    words = [f"container {state.get('Status')}", f"exit {code}", how, oom, state.get("Error")]
    return LaneExit(
        exit_code=code,
        signal=sig,
        oom_killed=bool(state.get("OOMKilled")),
        finished_at=_docker_time(state.get("FinishedAt")),
        detail=", ".join(filter(None, words)),
    )


def _docker_time(value: str | None) -> datetime | None:
    """Docker's RFC 3339 time with nanoseconds; it spells "never" as year 1."""
    if not value or value.startswith("0001-"):
        return None
    return datetime.fromisoformat(value)
