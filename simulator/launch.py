"""Starting the simulator as a subprocess, for tests and benchmarks of other packages.

    from simulator.launch import running

    with running("tiny", time_scale=10, args=["--fault", "error_rate=0.5"]) as sim:
        urllib.request.urlopen(sim.url + "/v1/models")
        sim.boot_log()        # everything it printed so far
    # on exit: SIGTERM to its process group, SIGKILL after a grace period

The server binds port 0 and the helper reads the chosen port from the boot log, so
parallel tests never race for a port. ``start``/``wait_ready``/``stop`` are the
pieces ``running`` is made of, for tests that need to watch the process die.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
LISTENING = re.compile(r"Starting vLLM API server 0 on http://(\S+):(\d+)")


class LaunchError(RuntimeError):
    """The simulator did not come up; the message carries the tail of its log."""


@dataclass
class SimServer:
    process: subprocess.Popen[bytes]
    log_path: Path
    host: str = "127.0.0.1"
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def boot_log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def returncode(self) -> int | None:
        return self.process.poll()


def start(
    profile: str = "tiny",
    *,
    time_scale: float = 1.0,
    args: Sequence[str] = (),
    host: str = "127.0.0.1",
    python: str = sys.executable,
    log_path: Path | None = None,
) -> SimServer:
    """Start ``python -m simulator`` on a free port, in its own process group."""
    if log_path is None:
        handle, name = tempfile.mkstemp(prefix="sim-", suffix=".log")
        os.close(handle)
        log_path = Path(name)
    command = [
        *(python, "-m", "simulator", "--profile", profile, "--host", host, "--port", "0"),
        *("--time-scale", str(time_scale), *args),
    ]
    paths = [str(PACKAGE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    return SimServer(process=process, log_path=log_path, host=host)


def wait_ready(server: SimServer, timeout_s: float = 30.0) -> SimServer:
    """Wait for the boot log to name the port, then for ``/health`` to return 200."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.returncode() is not None:
            raise LaunchError(f"simulator exited with {server.returncode()}:\n{tail(server)}")
        if not server.port:
            match = LISTENING.search(server.boot_log())
            if match:
                server.port = int(match.group(2))
        elif health(server.url) == 200:
            return server
        time.sleep(0.02)
    raise LaunchError(f"simulator not ready within {timeout_s} s:\n{tail(server)}")


def health(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None


def stop(server: SimServer, grace_s: float = 5.0) -> int:
    """SIGTERM the process group, SIGKILL it after ``grace_s``; returns the exit status."""
    if server.returncode() is None:
        with suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait()
    return int(server.process.returncode)


def tail(server: SimServer, lines: int = 30) -> str:
    return "\n".join(server.boot_log().splitlines()[-lines:])


@contextmanager
def running(
    profile: str = "tiny",
    *,
    time_scale: float = 1.0,
    args: Sequence[str] = (),
    ready_timeout_s: float = 30.0,
    python: str = sys.executable,
    log_path: Path | None = None,
) -> Iterator[SimServer]:
    """A ready simulator for the duration of the block, stopped after it.

    The log goes to ``log_path`` when given (and is kept); otherwise to a temporary
    file that is removed once the server has stopped.
    """
    server = start(profile, time_scale=time_scale, args=args, python=python, log_path=log_path)
    try:
        yield wait_ready(server, ready_timeout_s)
    finally:
        stop(server)
        if log_path is None:
            server.log_path.unlink(missing_ok=True)
