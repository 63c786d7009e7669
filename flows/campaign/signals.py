"""SIGTERM as an exception, and SIGTERM held back while the incumbent is being restored.

``faceoff run`` turns SIGTERM into ``Terminated`` so every ``finally`` runs: the
client process is stopped (it journals what is in flight), the lanes are
stopped, the incumbent is restored and the receipt written before the process
exits. (Inside a flow run Prefect installs its own SIGTERM bridge, which raises
``TerminationSignal`` the same way, and hands the signal back to ours after.)
While restoration runs, a further SIGTERM is remembered and delivered once it
is done: half a restoration is worse than a late exit.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

EXIT_TERMINATED = 128 + signal.SIGTERM  # faceoff.exits.Exit.TERMINATED
TERMINATED_MESSAGE = (
    "terminated by SIGTERM: the client and the lanes were stopped and, if the run had touched "
    "the incumbent, it was restored first (see receipt.json and `faceoff status`); "
    "`faceoff run` again resumes the campaign"
)


class Terminated(BaseException):
    """SIGTERM arrived; a BaseException so that ``except Exception`` cannot swallow it."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While inside: SIGTERM raises ``Terminated`` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def sigterm_deferred() -> Iterator[None]:
    """While inside: SIGTERM is remembered, then re-raised to the previous handler after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def remember(signum: int, _frame: Any) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGTERM, remember)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if received:
            signal.raise_signal(signal.SIGTERM)
