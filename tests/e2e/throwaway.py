"""Services of a test's own, to stop at will: never the shared ones the host runs.

A PostgreSQL started as ``.ci/run`` starts one (initdb and pg_ctl as user postgres, root
only) and a ``docker-registry`` serving hard links of the local registry's storage, each
on a free port under the caller's folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.conftest import free_port

REGISTRY_STORAGE = Path("/var/lib/faceoff-registry")


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[tuple[str, list[str]]]:
    """A PostgreSQL of the caller's own (never the shared one), as .ci/run starts one, in a
    folder of its own under /tmp that user postgres can reach: its URL and the ``pg_ctl``
    command that starts and stops it."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    if not found or os.geteuid() != 0:
        raise RuntimeError("needs root and PostgreSQL's binaries under /usr/lib/postgresql")
    bin_dir, port = found[-1].parent, free_port()
    with tempfile.TemporaryDirectory(prefix="faceoff-pg-") as folder:
        data = Path(folder)
        shutil.chown(data, "postgres", "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
        initdb = [str(bin_dir / "initdb"), "-D", str(data / "db"), "-A", "trust"]
        subprocess.run([*as_postgres, *initdb, "-U", "postgres"], check=True, capture_output=True)
        pg_ctl = [*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data / "db")]
        pg_ctl += ["-l", str(data / "postgres.log"), "-o", f"-h 127.0.0.1 -p {port} -k {data}"]
        subprocess.run([*pg_ctl, "-w", "start"], check=True, capture_output=True)
        try:
            psql = [str(bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
            create = [*psql, "-qc", "CREATE DATABASE faceoff"]
            subprocess.run(create, check=True, capture_output=True)
            yield f"postgresql://postgres@127.0.0.1:{port}/faceoff", pg_ctl
        finally:
            subprocess.run([*pg_ctl, "-m", "immediate", "stop"], check=False, capture_output=True)


@contextlib.contextmanager
def throwaway_registry(folder: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``docker-registry serve`` on a free port over hard links of the local registry's
    storage (read from, never written to); never the shared registry itself."""
    folder.mkdir()
    storage, address = folder / "storage", f"127.0.0.1:{free_port()}"
    subprocess.run(["cp", "-al", str(REGISTRY_STORAGE), str(storage)], check=True)
    config = folder / "registry.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {storage}\nhttp:\n  addr: {address}\n"
    )
    with (folder / "registry.log").open("ab") as log:
        registry = subprocess.Popen(
            ["docker-registry", "serve", str(config)], stdout=log, stderr=log
        )
    try:
        wait_for(lambda: answers(f"http://{address}/v2/"), "the registry", 60.0)
        yield address, registry
    finally:
        registry.kill()
        registry.wait()


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def wait_for(check: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)
