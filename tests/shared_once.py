"""A folder made once per test run and shared by every pytest-xdist worker.

A session fixture runs once per worker; one that runs a whole campaign would run it once
per worker. ``made_once`` makes the folder under a file lock in the run's base temporary
folder (the one all workers of a run share): the first worker to ask makes it, the others
wait and read it. The folder is for reading: a test that changes files copies it first.
``shared_once`` does the same for a value made with such a folder (a bundle's index, a
scenario's record): the first worker pickles it, every worker reads the same value.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base temporary folder of this run: a worker's own base is one level below it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path]
) -> Path:
    """``make(folder)``'s answer, computed by the first worker to ask; a later ask (any
    worker) gets the same path. A ``make`` that raised is tried again by the next ask."""
    root = run_root(tmp_path_factory)
    folder, answer = root / f"once-{name}", root / f"once-{name}.path"
    with (root / f"once-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not answer.exists():
            shutil.rmtree(folder, ignore_errors=True)
            made = make(folder)
            answer.write_text(str(made), encoding="utf-8")
        return Path(answer.read_text(encoding="utf-8"))


def shared_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]
) -> T:
    """``make(folder)``'s value (picklable), made once per run in ``folder`` as
    ``made_once`` makes its folder; every worker unpickles the same value."""
    kept = run_root(tmp_path_factory) / f"once-{name}.pickle"

    def keep(folder: Path) -> Path:
        kept.write_bytes(pickle.dumps(make(folder)))
        return folder

    made_once(tmp_path_factory, name, keep)
    value: T = pickle.loads(kept.read_bytes())
    return value
