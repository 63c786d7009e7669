"""The kernel's OOM-kill counter of a host lane's memory cgroup: the only OOM proof a process has.

A SIGKILL alone proves nothing (an operator, a supervisor or faceoff may have sent
it). The kernel counts its own OOM kills per memory cgroup: ``oom_kill`` in
``memory.events`` (v2) or ``memory.oom_control`` (v1). A host lane reads the
counter when it starts and again when it is found ended; a larger count is an OOM
kill in its cgroup. Where the counter cannot be read the answer is None (unknown),
never a guess.
"""

from __future__ import annotations

from collectors.cgroup import MemoryCgroup, cgroup_of_pid, read_memory_mounts

COUNTER_FILE = {1: "memory.oom_control", 2: "memory.events"}


def cgroup_of(pid: int) -> MemoryCgroup | None:
    """The memory cgroup of ``pid``; None where it cannot be found."""
    try:
        return cgroup_of_pid(pid, read_memory_mounts())
    except (OSError, LookupError):
        return None


def oom_kills(cgroup: MemoryCgroup | None) -> int | None:
    """The cgroup's ``oom_kill`` count; None where the kernel does not say (old kernels)."""
    if cgroup is None:
        return None
    try:
        text = (cgroup.path / COUNTER_FILE[cgroup.version]).read_text()
    except OSError:
        return None
    return parse_oom_kills(text)


def parse_oom_kills(text: str) -> int | None:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def oom_killed_since(before: int | None, after: int | None) -> bool | None:
    """Whether the kernel OOM-killed in the cgroup between two readings; None if unknown."""
    if before is None or after is None:
        return None
    return after > before
