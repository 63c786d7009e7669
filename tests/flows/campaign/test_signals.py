"""SIGTERM during a run: raised as ``Terminated`` in the main thread, deferred while a
restoration runs."""

from __future__ import annotations

import os
import signal

import pytest

from flows.campaign.signals import Terminated, sigterm_deferred, sigterm_raises


def terminate_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # the handler runs right after, in this thread


def restoration(steps: list[str]) -> None:
    with sigterm_deferred():
        terminate_self()
        steps.append("restoration went on")
    steps.append("never reached")


def test_sigterm_raises_terminated_in_the_main_thread() -> None:
    with sigterm_raises(), pytest.raises(Terminated):
        terminate_self()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_sigterm_during_restoration_waits_for_it_to_finish() -> None:
    steps: list[str] = []
    with sigterm_raises(), pytest.raises(Terminated):
        restoration(steps)
    assert steps == ["restoration went on"]
