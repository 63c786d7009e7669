"""The load client of a cell as its own process: ``python -m workload.cell_client``.
The same concept at another layer: ``workload.client``.

The client sends the requests and writes the journal; the orchestrator only
starts it, waits for it and, when it must, stops it. Its output goes to
``client.log`` in the attempt folder. The client is started through a small
launcher that asks the kernel to SIGTERM it when the orchestrator dies, so a
killed ``faceoff run`` never leaves a client sending requests to a lane (the
client journals its in-flight requests as cancelled and exits).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME
from matrix.model import ClientReceive
from workload.cell_client import client_command, read_summary
from workload.records import CLIENT_LOG, EXIT_DEADLINE

# After the client's own deadline, how long it gets to journal before it is stopped.
OVERRUN_GRACE_S = 30.0
STOP_GRACE_S = 15.0

# Runs before the client's own code, then execs the client's argv (argv[2:]):
# PR_SET_PDEATHSIG (1) survives execv, and a parent that died before prctl took
# effect is caught by the ppid check.
# The client starts with SIGTERM/SIGINT blocked (the mask survives fork and exec) and
# cell_client unblocks them once its handlers are installed: an early stop is held, then
# journaled, never lost.
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
LAUNCHER = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 15)\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit(143)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


@dataclass(frozen=True)
class ClientArgs:
    plan: Path
    base_url: str
    journal: Path
    deadline_s: float
    arm: str
    attempt: int
    receive: ClientReceive = "sleep"  # the campaign's client_receive

    def command(self, python: str) -> list[str]:
        return client_command(
            self.plan,
            self.base_url,
            self.journal,
            arm=self.arm,
            attempt=self.attempt,
            cell_deadline_s=self.deadline_s,
            python=python,
            receive=self.receive,
        )


@dataclass(frozen=True)
class ClientExit:
    """How the client process ended."""

    returncode: int
    summary: dict[str, Any] | None  # the client's closing JSON summary, when it printed one
    stopped_by_faceoff: str | None  # why the orchestrator stopped it, if it did

    @property
    def deadline_hit(self) -> bool:
        return self.returncode == EXIT_DEADLINE


class ClientProcess:
    """One run of the client; ``wait`` returns when it ends, ``stop`` ends it early."""

    def __init__(self, args: ClientArgs, log_path: Path, python: str) -> None:
        self.args = args
        self.log_path = Path(log_path)
        self.python = python
        self._popen: subprocess.Popen[bytes] | None = None
        self._stopped_by: str | None = None

    def start(self) -> None:
        command = [self.python, "-c", LAUNCHER, str(os.getpid()), *self.args.command(self.python)]
        try:
            with self.log_path.open("ab") as log, _stops_blocked():
                self._popen = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
                )
        except OSError as exc:
            raise FaceoffError(
                f"could not start the load client: {exc.strerror or exc}",
                where=str(self.args.plan),
                fix=f"check that {self.python} runs and has faceoff installed",
            ) from exc

    def wait(self) -> ClientExit:
        """Wait for the client; past its deadline plus a grace period it is stopped."""
        popen = self._require()
        try:
            popen.wait(timeout=self.args.deadline_s + OVERRUN_GRACE_S)
        except subprocess.TimeoutExpired:
            self.stop("the client overran its cell deadline")
        return self._exit()

    def stop(self, reason: str, grace_s: float = STOP_GRACE_S) -> ClientExit:
        """SIGTERM (the client journals what is in flight), SIGKILL after ``grace_s``."""
        popen = self._require()
        if popen.poll() is None:
            self._stopped_by = self._stopped_by or reason
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
        return self._exit()

    def _exit(self) -> ClientExit:
        popen = self._require()
        code = popen.returncode
        returncode = 128 - code if code < 0 else code  # Popen says -N for signal N
        return ClientExit(returncode, read_summary(self.log_path), self._stopped_by)

    def _require(self) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise FaceoffError("the load client was never started", where=str(self.args.plan))
        return self._popen


@contextmanager
def _stops_blocked() -> Iterator[None]:
    """Block the stop signals in this thread while it forks, so the child inherits it."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def run_client(
    folder: Path,
    *,
    base_url: str,
    deadline_s: float,
    arm: str,
    attempt: int,
    python: str,
    receive: ClientReceive,
) -> ClientExit:
    """Run the plan in ``folder`` to its end, journaling and logging into the same folder.

    A termination or task timeout lands in ``finally``: the client is stopped and
    journals what is in flight as cancelled.
    """
    plan, journal = folder / PLAN_NAME, folder / JOURNAL_NAME
    args = ClientArgs(plan, base_url, journal, deadline_s, arm, attempt, receive)
    client = ClientProcess(args, folder / CLIENT_LOG, python)
    client.start()
    try:
        return client.wait()
    finally:
        client.stop("the campaign run was interrupted")
