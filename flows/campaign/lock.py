"""One run of a campaign at a time: an advisory lock on a file in the campaign folder.

The kernel drops the lock when the holder dies, SIGKILL included, so a crashed
run never blocks the resume. (Across hosts the Prefect deployment's concurrency
limit is what keeps campaigns apart.) The same lock tells ``faceoff status`` whether
a campaign the ledger says is running still has a live run: one whose run was
killed says ``running`` until it is resumed, but nothing holds its lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from evidence.folder.layout import RUN_LOCK
from faceoff.bounded import read_text
from faceoff.errors import FaceoffError


class CampaignLock:
    def __init__(self, campaign_dir: Path) -> None:
        self.path = Path(campaign_dir) / RUN_LOCK
        self._fd: int | None = None

    def acquire(self) -> CampaignLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = os.read(fd, 64).decode(errors="replace").strip()
            os.close(fd)
            raise _busy(self.path.parent, holder) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> CampaignLock:
        return self.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _busy(campaign_dir: Path, holder: str) -> FaceoffError:
    return FaceoffError(
        f"the campaign is being run right now (pid {holder or 'of another process'}); this "
        "run started nothing",
        where=str(campaign_dir),
        fix="wait for that run to end, or stop it; a second run would mix attempts",
    )


def refuse_if_running(campaign_dir: Path) -> None:
    """Refuse, creating nothing, when a live run holds the campaign's lock: what ``faceoff
    run`` asks before its preflight, so that a second run touches nothing at all."""
    if run_in_progress(campaign_dir):
        lock = Path(campaign_dir) / RUN_LOCK
        holder = read_text(lock, 64) if lock.is_file() else ""
        raise _busy(Path(campaign_dir), holder.strip())


def run_in_progress(campaign_dir: Path) -> bool:
    """Whether a live process holds the campaign's run lock. Creates nothing; the probe is
    a shared lock, released at once."""
    try:
        # a FIFO or link in the lock's place never blocks the probe
        fd = os.open(Path(campaign_dir) / RUN_LOCK, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False  # no lock file: no run ever started there
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False
