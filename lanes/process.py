"""A lane as a host process (an engine installed on the host, or the simulator).

The process leads its own session and process group, so that stopping it reaches every
worker it forked, and so that a restored incumbent keeps serving after ``faceoff restore``
exits. Its output goes straight to a live ``boot.log`` outside the bundle (a pipe would die
with the orchestrator); each read and the stop copy it, redacted, into the run folder. How
the lane ended is recorded as first observed (the leader's exit, or the end of a process of
its group), never the SIGTERM faceoff sends afterwards; a SIGKILL is an OOM kill only when
the cgroup's OOM-kill counter rose (``lanes.oomkills``). In full: docs/lanes.md,
"Host-process lanes".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from faceoff.errors import FaceoffError
from faceoff.formats.lane import BOOT_LOG_FILE, SIGNAL_EXIT_BASE, LaneExit, LaneRecord
from faceoff.ports import Clock
from lanes.bootlog import write_boot_log
from lanes.environment import LaneEnv
from lanes.lane import GRACE_S, RecordedLane
from lanes.lane_context import LaneContext, live_run_dir
from lanes.oomkills import cgroup_of, oom_killed_since, oom_kills
from matrix.arm import Arm

# The lane's process starts as this gate and holds until faceoff has recorded its pid in
# lane.json; then it execs the engine, under the same pid. If faceoff dies before (SIGKILL
# while the lane boots), the pipe's write end closes and the gate exits without starting
# the engine: no engine ever listens that no record names.
GATE = (
    "import os, sys\n"
    "fd = int(sys.argv[1])\n"
    "go = os.read(fd, 1)\n"
    "os.close(fd)\n"
    "if go != b'1': sys.exit(75)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
GATE_CLOSED = 75  # the gate's exit status when faceoff died before recording the lane


class ProcessLane(RecordedLane):
    """One host-process run of an arm; records under ``ctx.run_dir``."""

    def __init__(
        self, arm: Arm, ctx: LaneContext, command: list[str], env: dict[str, str], secrets: LaneEnv
    ) -> None:
        super().__init__(arm, ctx)
        self.command = command
        self.env = env
        self.secrets = secrets
        self._popen: subprocess.Popen[bytes] | None = None
        self._oom_counter: tuple[Any, int | None] = (None, None)  # cgroup, count at start
        self._watched: dict[int, tuple[str, float]] = {}  # pid: (name, start time)

    def start(self) -> LaneRecord:
        """Start the process behind its gate, record it in ``lane.json``, then open the gate:
        the engine runs only once the record names it."""
        log_path = self._live_log()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._require_executable()
        gate, release = os.pipe()
        try:
            self._popen = self._spawn(log_path, gate)
        finally:
            os.close(gate)
        try:
            record = self._record_started(self._popen.pid)
            os.write(release, b"1")
        finally:
            os.close(release)
        return record

    def _spawn(self, log_path: Path, gate: int) -> subprocess.Popen[bytes]:
        try:
            with log_path.open("ab") as log:
                return subprocess.Popen(
                    [sys.executable, "-c", GATE, str(gate), *self.command],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    start_new_session=True,
                    pass_fds=(gate,),
                )
        except OSError as exc:
            raise self._not_started(exc.strerror or str(exc)) from exc

    def _require_executable(self) -> None:
        """The command's program, found as the gate's exec will look for it."""
        if shutil.which(self.command[0], path=self.env.get("PATH", os.defpath)) is None:
            raise self._not_started("no such executable file")

    def _not_started(self, why: str) -> FaceoffError:
        return FaceoffError(
            f"could not start {self.command[0]!r}: {why}",
            where=f"arms[{self.arm.name}].command",
            fix="check that the engine is installed and the command is spelled right",
        )

    def _record_started(self, pid: int) -> LaneRecord:
        cgroup = cgroup_of(pid)
        self._oom_counter = (cgroup, oom_kills(cgroup))
        now = self.ctx.now()
        return self._first_record(
            self.secrets,
            state="running",
            pid=pid,
            pid_started_at=_started_at(pid),
            command=[str(self.secrets.scrub(part)) for part in self.command],
            created_at=now,
            started_at=now,
        )

    def running_image(self) -> str | None:
        return None  # a host process runs no image; its identity rests on the other fields

    def boot_log(self) -> str:
        """The redacted output so far, also written to the run folder as its snapshot."""
        return write_boot_log(self.ctx.run_dir, self._raw_boot_log(), self.secrets)

    def watch(self) -> None:
        """Remember the group's processes as they are now (the lane is up): one of them
        ending later, while the leader runs, is the lane dying."""
        leader = self._started().pid  # its end is read from its exit status
        self._watched = {p: v for p, v in group_members(leader).items() if p != leader}

    def exit_status(self) -> LaneExit | None:
        """How the lane ended, as first observed; None while the leader and every watched
        process of its group run."""
        if self.died is None:
            group = group_members(self._started().pid) if self._watched else {}
            lost = lost_members(self._watched, group)
            code = self._started().poll()  # after the group: a leader that ended says so
            if code is not None:
                self.died = _exit_from_returncode(code, self.ctx.now, self._oom_killed(), lost)
            elif lost:
                self.died = LaneExit(
                    exit_code=None,
                    oom_killed=self._oom_killed(),
                    finished_at=self.ctx.now(),
                    detail=f"{'; '.join(lost)} while the lane's leader still ran",
                )
        return self.died

    def stop(self, grace_s: float = GRACE_S) -> LaneExit:
        """SIGTERM to the whole group, SIGKILL after ``grace_s``; then the redacted boot log."""
        popen = self._started()
        ended = self.exit_status()  # the leader may have ended; its workers still get signals
        terminate_group(popen.pid, grace_s, popen.wait)
        ended = ended or _exit_from_returncode(popen.wait(), self.ctx.now, self._oom_killed(), [])
        write_boot_log(self.ctx.run_dir, self._raw_boot_log(), self.secrets)  # redacts it
        self._update(state="stopped", stopped_at=self.ctx.now(), exit=ended)
        return ended

    def remove(self) -> None:
        """A process leaves nothing to remove once stopped; stop it if it still runs."""
        if self._record is not None and self.record.state not in ("stopped", "removed"):
            self.stop()

    def _oom_killed(self) -> bool | None:
        cgroup, before = self._oom_counter
        return oom_killed_since(before, oom_kills(cgroup))

    def _raw_boot_log(self) -> str:
        path = self._live_log()
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def _live_log(self) -> Path:
        return live_run_dir(self.ctx.run_dir) / BOOT_LOG_FILE

    def _started(self) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise FaceoffError(f"lane of arm {self.arm.name!r} was never started")
        return self._popen


def terminate_group(pgid: int, grace_s: float, wait: Any) -> None:
    """SIGTERM the group, give the leader ``grace_s`` (``wait(timeout=…)``), then SIGKILL it.

    The final SIGKILL goes to the group even when the leader exited in time, so a
    worker that ignored SIGTERM does not outlive its lane.
    """
    _signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired, psutil.TimeoutExpired):
        wait(timeout=grace_s)
    _signal_group(pgid, signal.SIGKILL)


def is_same_process(pid: int, started_at: float | None) -> bool:
    """Whether ``pid`` is still the live process that was recorded (pids get reused).

    A zombie has ended; it only waits for its parent to collect its status.
    """
    try:
        process = psutil.Process(pid)
        same = started_at is not None and abs(process.create_time() - started_at) < 1
        return same and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait for a process that is not our child to end; True when it has."""
    deadline = time.monotonic() + timeout
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is empty already
        os.killpg(pgid, sig)


def _started_at(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None  # it already exited; exit_status will say how


def group_members(pgid: int) -> dict[int, tuple[str, float]]:
    """The live processes of a process group: {pid: (name, start time)}."""
    members = {}
    for process in psutil.process_iter(["name", "create_time", "status"]):
        with contextlib.suppress(OSError, psutil.Error):
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == pgid:
                members[process.pid] = (process.info["name"], process.info["create_time"])
    return members


def lost_members(
    watched: dict[int, tuple[str, float]], now: dict[int, tuple[str, float]]
) -> list[str]:
    """A sentence for each watched process no longer in the group (a reused pid is gone too)."""
    return [
        f"process {pid} ({name}) of the lane's group ended"
        for pid, (name, started) in sorted(watched.items())
        if now.get(pid, (name, None))[1] != started
    ]


def _exit_from_returncode(
    code: int, now: Clock, oom_killed: bool | None, lost: list[str]
) -> LaneExit:
    """The leader's exit; ``lost``: group processes that had ended before it was seen."""
    before = f" ({'; '.join(lost)} before)" if lost else ""
    oom = {True: ", OOM-killed (the cgroup's oom_kill count rose)", False: "", None: ""}
    if code < 0:
        sig = -code
        return LaneExit(
            exit_code=SIGNAL_EXIT_BASE + sig,
            signal=sig,
            oom_killed=oom_killed,
            finished_at=now(),
            detail=f"ended by {signal.Signals(sig).name}{oom[oom_killed]}{before}",
        )
    return LaneExit(
        exit_code=code,
        oom_killed=oom_killed,
        finished_at=now(),
        detail=f"exited with status {code}{oom[oom_killed]}{before}",
    )
