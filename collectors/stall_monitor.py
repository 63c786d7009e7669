"""Starting and stopping the host-stall monitor process (``python -m collectors.stall``).

The orchestrator starts it before a cell's samplers and stops it after their
drain, so its watch spans the whole cell window. It is a separate process on
purpose: a thread of the orchestrator would share the GIL with the samplers and
report their pauses as the host's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from collectors.stall import TICK_NS
from faceoff.errors import FaceoffError

# Both waits end as soon as the monitor answers or exits; their length only matters on a
# host that does not run it. A real night's monitor, pinned to a core the host stalled for
# tens of seconds, missed a 60 s start and a 30 s stop: the cell then lost its telemetry,
# or its stall record lost its last line, to a deadline sized for a quiet host.
START_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 120.0


class StallMonitor:
    """One monitor process writing ``stalls.jsonl`` at ``path``."""

    def __init__(
        self,
        path: Path,
        *,
        threshold_ns: int,
        client_marker: str | None = None,
        tick_ns: int = TICK_NS,
        python: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.command = [
            python or sys.executable,
            "-m",
            "collectors.stall",
            "--out",
            str(self.path),
            "--threshold-ns",
            str(threshold_ns),
            "--tick-ns",
            str(tick_ns),
            "--parent",
            str(os.getpid()),
            *(["--client-marker", client_marker] if client_marker else []),
        ]
        self._process: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the monitor; return once it is watching (its start line is written)."""
        process = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        self._process = process
        answered = threading.Event()  # its first line, or the end of its output
        first: list[str] = []
        threading.Thread(target=_first_line, args=(process, first, answered), daemon=True).start()
        if answered.wait(timeout_s) and first == ["watching"] and process.poll() is None:
            return
        ended = process.poll()
        error = self._end() or "no output"
        what = (
            f"exited with status {ended} before it started: {error}"
            if ended is not None
            else f"did not start within {timeout_s} s (the host did not run it): {error}"
        )
        raise FaceoffError(
            f"the host-stall monitor {what}",
            where=str(self.path.parent),
            fix="check that this Python can run `python -m collectors.stall`",
        )

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """Stop the monitor (it writes its stop line); its exit status, None if never started."""
        if self._process is None:
            return None
        self._end(timeout_s)
        return self._process.returncode

    def _end(self, timeout_s: float = STOP_TIMEOUT_S) -> str:
        process = self._process
        assert process is not None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return (process.stderr.read() if process.stderr else "").strip()[-500:]


def _first_line(
    process: subprocess.Popen[str], first: list[str], answered: threading.Event
) -> None:
    assert process.stdout is not None
    first.append(process.stdout.readline().strip())
    answered.set()
