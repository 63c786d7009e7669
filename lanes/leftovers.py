"""Lanes left behind by a crashed campaign: found by label or by record, then removed.

Containers are found by their ``faceoff.campaign`` label; host processes by the
``lane.json`` records under the campaign folder (pid plus its start time, so a
reused pid is never signalled; a host lane is recorded before its engine runs). A
restored incumbent (purpose ``restore``) is production again and is left alone unless
the caller asks otherwise. What still holds a port once they are gone is not ours:
``port_holder`` names it, and the restoration refuses to start on top of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import docker.errors
import psutil

from faceoff.errors import FaceoffError
from faceoff.formats.lane import LANE_FILE, LANES_DIR, LaneExit, LaneRecord
from faceoff.ports import Clock, DockerClient, DockerContainer, DockerFactory, container_id
from lanes.lane import GRACE_S
from lanes.lane_context import (
    LABEL_ARM,
    LABEL_CAMPAIGN,
    LABEL_PURPOSE,
    LABEL_RUN,
    LanePurpose,
    live_run_dir,
)
from lanes.process import is_same_process, terminate_group, wait_gone


@dataclass(frozen=True)
class Leftover:
    """One lane that was found running or present, and what was done with it."""

    arm: str
    run: str
    kind: Literal["container", "process"]
    ident: str  # container id or pid
    purpose: str


def campaign_containers(
    client: DockerClient,
    campaign: str,
    *,
    arms: Iterable[str] | None = None,
    keep_restore: bool = True,
) -> list[DockerContainer]:
    """Containers labelled with the campaign (stopped ones too), optionally of some arms."""
    found = client.containers.list(all=True, filters={"label": f"{LABEL_CAMPAIGN}={campaign}"})
    wanted = None if arms is None else set(arms)
    return [
        c
        for c in found
        if (wanted is None or c.labels.get(LABEL_ARM) in wanted)
        and not (keep_restore and c.labels.get(LABEL_PURPOSE) == LanePurpose.RESTORE)
    ]


def remove_containers(
    containers: Sequence[DockerContainer], grace_s: float = GRACE_S
) -> list[Leftover]:
    removed = []
    for container in containers:
        try:
            container.stop(timeout=max(1, round(grace_s)))
            container.remove(force=True)
        except docker.errors.NotFound:
            pass  # it went away on its own meanwhile
        except docker.errors.APIError as exc:
            raise FaceoffError(
                f"could not remove leftover container {container.name}: {exc.explanation or exc}",
                fix=f"remove it by hand: docker rm -f {container_id(container)[:12]}",
            ) from exc
        labels = container.labels
        removed.append(
            Leftover(
                arm=labels.get(LABEL_ARM, "?"),
                run=labels.get(LABEL_RUN, "?"),
                kind="container",
                ident=container_id(container),
                purpose=labels.get(LABEL_PURPOSE, "?"),
            )
        )
    return removed


def live_process_records(
    campaign_dir: Path, *, arms: Iterable[str] | None = None, keep_restore: bool = True
) -> list[tuple[Path, LaneRecord]]:
    """Host-process lane records whose recorded process is still alive."""
    wanted = None if arms is None else set(arms)
    live = []
    for path, record in _records(campaign_dir):
        if record.pid is None or record.container_id is not None:
            continue
        if wanted is not None and record.arm not in wanted:
            continue
        if keep_restore and record.purpose == LanePurpose.RESTORE:
            continue
        if is_same_process(record.pid, record.pid_started_at):
            live.append((path.parent, record))
    return live


def stop_processes(
    records: list[tuple[Path, LaneRecord]], now: Clock, grace_s: float = GRACE_S
) -> list[Leftover]:
    """Stop each recorded process group; its stopped record goes to the live folder.

    The run folder is left as it is: it may belong to a sealed bundle (a restored
    incumbent stopped by ``faceoff teardown`` or by a later campaign's takeover).
    """
    stopped = []
    for run_dir, record in records:
        pid = int(record.pid or 0)
        terminate_group(pid, grace_s, lambda timeout, pid=pid: wait_gone(pid, timeout))
        ended = LaneExit(exit_code=None, finished_at=now(), detail="stopped as a leftover lane")
        live = live_run_dir(run_dir)
        live.mkdir(parents=True, exist_ok=True)
        record.model_copy(update={"state": "stopped", "stopped_at": now(), "exit": ended}).save(
            live
        )
        stopped.append(Leftover(record.arm, record.run, "process", str(pid), record.purpose))
    return stopped


def clear_campaign_lanes(
    campaign_dir: Path,
    campaign: str,
    client: DockerClient | None,
    now: Clock,
    grace_s: float = GRACE_S,
) -> list[Leftover]:
    """Remove every lane of the campaign, its restored incumbents too.

    Containers are looked for only when a Docker ``client`` is given.
    """
    removed = []
    if client is not None:
        containers = campaign_containers(client, campaign, keep_restore=False)
        removed += remove_containers(containers, grace_s)
    records = live_process_records(campaign_dir, keep_restore=False)
    return removed + stop_processes(records, now, grace_s)


def teardown(
    campaign_dir: Path, campaign: str, now: Clock, docker_factory: DockerFactory
) -> list[Leftover]:
    """Stop every lane the campaign started, the restored incumbent too.

    For demos and test hosts, where the incumbent is not production: a real
    campaign leaves its restored incumbent serving. Docker is only reached when
    a lane record names a container.
    """
    named = any(record.container_id for _, record in _records(campaign_dir))
    return clear_campaign_lanes(campaign_dir, campaign, docker_factory() if named else None, now)


def port_holder(port: int) -> str | None:
    """What listens on TCP ``port`` on this host (its pid and command line), else None."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return None  # another user's sockets cannot be read; the lane's own start will say
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            return f"pid {conn.pid} ({_command(conn.pid)})" if conn.pid else "another process"
    return None


def _command(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())[:120] or "?"
    except psutil.Error:
        return "?"


def _records(campaign_dir: Path) -> list[tuple[Path, LaneRecord]]:
    paths = sorted(Path(campaign_dir).glob(f"{LANES_DIR}/*/*/{LANE_FILE}"))
    return [(p, LaneRecord.read(p)) for p in paths]
