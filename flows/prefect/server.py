"""Prefect for ``faceoff run`` on one machine: settings, and the run's own ephemeral server.

With no ``PREFECT_API_URL`` faceoff starts a temporary Prefect server for the run itself:
Prefect's own would pick a random port in 8000–8999, where vLLM lanes listen, and would
outlive a ``faceoff run`` killed by SIGKILL. One that dies mid-run is started again on its
port (``RunServer``); one that cannot be is a loss ``flows.cli.server_lost`` reports. No
Prefect import here at load: the values must be in the environment before Prefect is
imported. Its port, parent-death signal, start timeout, shutdown and the settings kept:
docs/flows.md, "faceoff run".
"""

from __future__ import annotations

import importlib.util
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from faceoff.errors import FaceoffError
from flows.campaign.client import LAUNCHER
from lanes.http import UrllibHttp

PREFECT_DIR = ".prefect"
SERVER_LOG = "server.log"
STARTUP_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
STARTUP_TIMEOUT_S = 600  # Prefect's 20 s, and 120 s, were too short at load 12-17 on 2 cores
ENGINE_PORTS = range(8000, 9000)  # where vLLM lanes (and Prefect's own choice) listen
PORT_TRIES = 20
START_TRIES = 3
EXITED_AT_ONCE = (3,)  # uvicorn cannot bind its port (taken since the check)
STOP_GRACE_S = 10.0
JSON_FORMATTER = "flows.cli.views.json_log.JsonLines"  # named, not imported: no Prefect here


def prefect_defaults(
    environ: Mapping[str, str], workdir: Path, *, live_view: bool = False, json_logs: bool = False
) -> dict[str, str]:
    """The settings to add to ``environ`` (only those it does not set already).

    With the live view on the terminal, Prefect's console shows warnings only (the
    view shows progress; every log line still goes to the Prefect API). ``json_logs``: each
    console line a JSON object (``flows.cli.views.json_log``).
    """
    defaults = {
        "PREFECT_HOME": str((Path(workdir) / PREFECT_DIR).resolve()),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        STARTUP_TIMEOUT_ENV: str(STARTUP_TIMEOUT_S),
    }
    if live_view:
        defaults["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
    if json_logs:
        defaults["PREFECT_LOGGING_FORMATTERS_JSON_CLASS"] = JSON_FORMATTER
        defaults["PREFECT_LOGGING_HANDLERS_CONSOLE_FORMATTER"] = "json"
    return {key: value for key, value in defaults.items() if key not in environ}


def apply_prefect_defaults(
    environ: MutableMapping[str, str],
    workdir: Path,
    *,
    live_view: bool = False,
    json_logs: bool = False,
) -> None:
    """Add the defaults to ``environ`` and create ``PREFECT_HOME`` (Prefect does not create
    missing parents)."""
    environ.update(prefect_defaults(environ, workdir, live_view=live_view, json_logs=json_logs))
    home = Path(environ["PREFECT_HOME"])
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FaceoffError(
            f"cannot create Prefect's home folder: {exc.strerror}",
            where=f"PREFECT_HOME={home}",
            fix="point PREFECT_HOME at a writable folder, or unset it (default <workdir>/.prefect)",
        ) from None


def server_port(avoid: Collection[int]) -> int:
    """A free loopback port outside 8000–8999 and outside ``avoid`` (the arms' ports)."""
    for _ in range(PORT_TRIES):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in ENGINE_PORTS and port not in avoid:
            return port
    raise FaceoffError(
        "found no free port for Prefect's ephemeral server outside 8000-8999 and the arms' ports",
        fix="free some ports, or run against a Prefect server (set PREFECT_API_URL)",
    )


def server_command(port: int) -> list[str]:
    """Prefect's own ephemeral server (uvicorn on its app factory), under the launcher that
    asks the kernel to SIGTERM it when this process dies."""
    spec = importlib.util.find_spec("prefect")
    assert spec is not None and spec.submodule_search_locations
    app_dir = str(Path(spec.submodule_search_locations[0]).parent)
    uvicorn = [sys.executable, "-m", "uvicorn", "--app-dir", app_dir, "--factory"]
    uvicorn += ["prefect.server.api.server:create_app", "--host", "127.0.0.1"]
    uvicorn += ["--port", str(port), "--log-level", "error", "--lifespan", "on"]
    return [sys.executable, "-c", LAUNCHER, str(os.getpid()), *uvicorn]


Popen = subprocess.Popen[bytes]


class RunServer:
    """The run's Prefect server, started again on its port when it exits while the run goes
    on (killed, crashed): Prefect's client retries a refused connection for about a minute
    once it has connected, so the flow's state reports and artifacts reach the new server,
    and the campaign never waits on a dead one. ``losses`` says what happened, one
    sentence each."""

    def __init__(self, environ: Mapping[str, str], avoid: Collection[int]) -> None:
        self._environ = dict(environ)
        self.server, self.port = _start(environ, avoid)
        self.losses: list[str] = []
        self.gone = False  # exited and could not be started again: nothing reaches Prefect
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        # The launcher's parent-death signal follows the thread that started a server:
        # this thread starts the replacements and lives until ``stop``.
        self._watch = threading.Thread(target=self._keep, name="prefect-server", daemon=True)
        self._watch.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def _keep(self) -> None:
        while True:
            status = self.server.wait()
            with self._lock:
                if self._stopping.is_set():
                    return
                when = time.strftime("%H:%M:%S")
                try:
                    server, problem = _launch(self._environ, self.port)
                except OSError as exc:  # e.g. PREFECT_HOME removed: no log to write to
                    problem = _unlaunched(exc)
                if problem is not None:
                    self.losses.append(
                        f"exited with status {status} at {when} and could not be started "
                        f"again: it {problem}"
                    )
                    self.gone = True
                    quiet_prefect_after_loss()
                    _stop_client_retries()
                    return
                self.server = server
                self.losses.append(
                    f"exited with status {status} at {when}; started again on 127.0.0.1:{self.port}"
                )

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
            self.server.terminate()
            try:
                self.server.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self._watch.join(STOP_GRACE_S)


@contextmanager
def ephemeral_server(
    environ: MutableMapping[str, str], avoid: Collection[int]
) -> Iterator[RunServer | None]:
    """Unless ``PREFECT_API_URL`` is set: start the run's Prefect server, point
    ``PREFECT_API_URL`` at it while inside, stop it after. Yields the server (None when
    the operator's own is used)."""
    if environ.get("PREFECT_API_URL"):
        yield None
        return
    server = RunServer(environ, avoid)
    environ["PREFECT_API_URL"] = server.url
    try:
        yield server
    finally:
        del environ["PREFECT_API_URL"]
        if server.gone:
            _drop_pending_records()
        else:
            _hand_over_pending_records()
        server.stop()


def loss_line(losses: Sequence[str]) -> str:
    """One line for the operator: the server's losses; the campaign itself never needed it."""
    return (
        f"warning: Prefect's ephemeral server {'; then '.join(losses)}. The campaign's "
        "measurements, restoration and bundle never depend on it (its evidence is in the "
        "campaign folder); Prefect's record of this run may lack task runs from that gap"
    )


class LostServerRecords(logging.Filter):
    """Prefect's records once the run's server is gone for good: its engine's tracebacks of
    the failed API calls and its event worker's dumps of each event it could not send say
    nothing that faceoff's one ``error:`` line does not (how the server died, where the
    campaign got to, what to do); their messages stay, without tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(EVENT_SERVICES) and "failed to process item" in str(record.msg):
            return False
        if record.name.startswith("prefect"):
            record.exc_info, record.exc_text = None, None
        return True


EVENT_SERVICES = "prefect._internal.concurrency"  # where Prefect's workers log what failed


def quiet_prefect_after_loss() -> None:
    """Put ``LostServerRecords`` on the handlers Prefect's records reach: the root's (its
    console) and those of its internal services."""
    quiet = LostServerRecords()
    for name in ("", "prefect._internal"):
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(quiet)


def _stop_client_retries() -> None:
    """Prefect's client retries a refused call for about a minute (5 times, backing off):
    worth it while the server can come back on its port, not once it cannot, where the
    flow's final state report held the ended run for 67 s before it stopped."""
    if "prefect" not in sys.modules:
        return
    from prefect.context import GLOBAL_SETTINGS_CONTEXT  # noqa: PLC0415  (reads env at import)

    GLOBAL_SETTINGS_CONTEXT.settings.client.max_retries = 0


def _hand_over_pending_records() -> None:
    """Let Prefect's log and event workers send what they still queue while the server can
    take it: once it is gone they retry at exit, holding the process for over a minute."""
    if "prefect" not in sys.modules:  # nothing imported Prefect: nothing is queued
        return
    from prefect.events.worker import EventsWorker  # noqa: PLC0415  (Prefect reads env at import)
    from prefect.logging.handlers import APILogWorker  # noqa: PLC0415

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=STOP_GRACE_S)


def _drop_pending_records() -> None:
    """Empty Prefect's log and event workers' queues once the run's server is gone for good:
    nothing can take them, each event's send retries a refused connection for ~7 s, and at
    exit Prefect waits for every one (19 queued events held a finished run for 2 min 20 s)."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker  # noqa: PLC0415  (Prefect reads env at import)
    from prefect.logging.handlers import APILogWorker  # noqa: PLC0415

    services: Mapping[int, object] = EventsWorker._instances  # type: ignore[misc]  # all services share it
    with EventsWorker._instance_cache_lock:  # Prefect has no public way to discard a queue
        instances = tuple(services.values())  # every service's, both kinds among them
    for instance in instances:
        if isinstance(instance, APILogWorker | EventsWorker):
            _empty(instance._queue)
    EventsWorker.drain_all(timeout=STOP_GRACE_S)  # the one in hand, if any, then all stopped


def _empty(pending: queue.Queue[Any]) -> None:
    while True:
        try:
            pending.get_nowait()
        except queue.Empty:
            return
        pending.task_done()


def _start(environ: Mapping[str, str], avoid: Collection[int]) -> tuple[Popen, int]:
    """The running server and its port. A server that exits at once (its port was taken
    between the check and its bind) is tried again on another port; one that does not
    answer in time is not."""
    for _ in range(START_TRIES):
        port = server_port(avoid)
        try:
            server, problem = _launch(environ, port)
        except OSError as exc:
            problem = _unlaunched(exc)
            break
        if problem is None:
            return server, port
        if server.returncode not in EXITED_AT_ONCE:
            break
    raise FaceoffError(
        f"Prefect's ephemeral server on 127.0.0.1:{port} {problem}; nothing was run "
        f"(its log: {Path(environ['PREFECT_HOME']) / SERVER_LOG})",
        fix=f"raise {STARTUP_TIMEOUT_ENV} on a loaded host, or set PREFECT_API_URL to a "
        "running Prefect server",
    )


def _unlaunched(exc: OSError) -> str:
    """Why no server process could be started (its log, or the process itself)."""
    return f"could not be launched ({exc.strerror or exc}: {exc.filename or 'the server'})"


def _launch(environ: Mapping[str, str], port: int) -> tuple[Popen, str | None]:
    """A server on ``port`` and None once it answers ``/api/health``; else the ended
    server and why it did not answer. OSError when its log cannot be opened or no process
    can be started."""
    log = Path(environ["PREFECT_HOME"]) / SERVER_LOG
    timeout_s = float(environ.get(STARTUP_TIMEOUT_ENV) or STARTUP_TIMEOUT_S)
    env = {**environ, "PREFECT_UI_ENABLED": "0"}
    env |= {"PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    env.pop("PREFECT_API_URL", None)
    with log.open("ab") as out:
        server = subprocess.Popen(
            server_command(port), env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    problem = _wait_healthy(server, f"http://127.0.0.1:{port}/api/health", timeout_s)
    if problem is not None:
        server.kill()
        server.wait()
    return server, problem


def _wait_healthy(server: Popen, url: str, timeout_s: float) -> str | None:
    """None once the server answers, else why it did not."""
    http, deadline = UrllibHttp(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return f"exited with status {server.returncode} before it answered"
        if http.get(url, timeout=5.0).ok:
            return None
        time.sleep(0.2)
    return f"did not answer within {timeout_s:g} s ({STARTUP_TIMEOUT_ENV})"
