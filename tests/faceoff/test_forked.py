"""faceoff.forked: tasks in forked workers, in order, one BLAS thread each, only while one
thread runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from faceoff.forked import forked_map, workers

REPO = Path(__file__).resolve().parents[2]
# Run in a process of its own: this test session runs other threads, and a fork copies
# whatever lock one of them holds.
SCRIPT = """
import json, os, sys
import numpy  # its BLAS: each worker keeps it to one thread
from threadpoolctl import threadpool_info
from faceoff.forked import forked_map, workers
def blas_threads():
    return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
loaded = {"who": "the parent's memory"}  # read by the workers through the fork, never pickled
def task(i):
    if i == 5:
        raise ValueError("task 5 fails")
    return [i, os.getpid(), loaded["who"]]
print(json.dumps({"parent": os.getpid(), "workers": [workers(4, 3), workers(2, 8)],
                  "done": forked_map(task, 5, 3), "parent_blas": blas_threads(),
                  "blas": forked_map(lambda i: blas_threads(), 2, 2)}))
try:
    forked_map(task, 6, 3)
except ValueError as exc:
    print(json.dumps({"raised": str(exc)}))
"""


def test_forked_workers_run_tasks_in_order_on_one_blas_thread_and_raise_in_the_parent() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["workers"] == [3, 2]  # as asked, but no more than one per task
    assert [i for i, _, _ in first["done"]] == [0, 1, 2, 3, 4]
    pids = {pid for _, pid, _ in first["done"]}
    assert first["parent"] not in pids and pids
    assert {who for _, _, who in first["done"]} == {"the parent's memory"}
    assert second == {"raised": "task 5 fails"}
    assert first["blas"] == [[1], [1]]  # the workers fill the CPUs; BLAS adds no threads
    assert first["parent_blas"], "numpy's BLAS was not found: the check above proves nothing"


def test_work_stays_in_process_while_another_thread_runs() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert workers(8, 4) == 1
        assert forked_map(lambda i: (i, os.getpid()), 3, workers(3)) == [
            (i, os.getpid()) for i in range(3)
        ]
    finally:
        release.set()
        other.join()
