"""Work shared out to forked worker processes, where that is safe.

A fork copies the parent's memory, so a worker reads what the parent loaded (a
campaign's inputs, its frozen matrix) without pickling it; only each task's result
crosses back. A fork also copies any lock another thread holds at that moment, so work is
forked only while this process runs one thread (the CLI's audit), and runs in-process
otherwise (a flow, a test session). Each worker keeps numpy's BLAS to one thread, since
the workers already fill the CPUs (docs/evidence.md, "At scale").
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")

_HANDED: dict[str, Callable[[int], Any]] = {}  # the task the forked workers run, inherited
_LIMITS: list[Any] = []  # a worker's BLAS limit, held for its life


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def workers(tasks: int, wanted: int | None = None) -> int:
    """How many processes for ``tasks`` tasks: ``wanted``, else every CPU this process may
    run on; at most one per task; 1 while other threads run."""
    if threading.active_count() > 1:
        return 1
    return max(1, min(wanted or usable_cpus(), tasks))


def forked_map(task: Callable[[int], R], tasks: int, processes: int) -> list[R]:
    """``task(i)`` for i in 0..tasks-1, results in order; in ``processes`` forked workers
    when more than one (``workers`` says how many may be). An exception in a task is
    raised here, as in-process."""
    if processes <= 1:
        return [task(i) for i in range(tasks)]
    _HANDED["task"] = task  # set before the workers fork: they find it, it is never pickled
    try:
        context = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(processes, mp_context=context, initializer=_one_blas_thread)
        with pool:
            return list(pool.map(_run, range(tasks)))
    finally:
        _HANDED.clear()


def _one_blas_thread() -> None:
    from threadpoolctl import threadpool_limits  # noqa: PLC0415  (only a worker needs it)

    _LIMITS.append(threadpool_limits(limits=1, user_api="blas"))


def _run(index: int) -> Any:
    return _HANDED["task"](index)
