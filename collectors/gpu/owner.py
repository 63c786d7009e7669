"""Whose is a compute process on the arm's GPUs: the lane's, or a foreign one?

NVML lists the processes that hold a context on a GPU by host pid. A process is the
lane's when its ``/proc/<pid>/cgroup`` names the lane's container, or when it is the
lane's root process or one of its descendants (a process lane, and a container's
engine under its init). A pid that does not exist here is foreign: every process a
lane started is visible to the orchestrator, which runs in the host's pid namespace
(the deployment's worker does), so NVML's view of it would be ours as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import psutil

from collectors.host import MemoryTarget


class ProcessOwner(Protocol):
    def owns(self, pid: int) -> bool | None:
        """True: the lane's; False: foreign; None: cannot tell."""
        ...


class LaneProcessOwner:
    """The lane of ``target``: its container's cgroup, or its root pid's process tree."""

    def __init__(self, target: MemoryTarget, proc: Path = Path("/proc")) -> None:
        self.target = target
        self.proc = proc

    def owns(self, pid: int) -> bool | None:
        try:
            cgroup = (self.proc / str(pid) / "cgroup").read_text(encoding="utf-8")
        except FileNotFoundError:
            return False  # no such process here: not one the lane started
        except OSError:
            return None
        container = self.target.container_id
        if container is not None and container in cgroup:
            return True
        return self._in_tree(pid)

    def _in_tree(self, pid: int) -> bool | None:
        root = self.target.pid
        if root is None:
            return False if self.target.container_id is not None else None
        if pid == root:
            return True
        try:
            return any(parent.pid == root for parent in psutil.Process(pid).parents())
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return None
