"""The run's environment: the operator's secrets set, each host lane's program found, room
on the workdir's disk for the bundle, and Prefect's home writable.
The same concept at another layer: ``lanes.environment``.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.format import gib
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import arm_subject, fail, ok
from lanes.environment import LaneEnv
from lanes.factory import check_program
from matrix.arm import LaneKind
from matrix.campaign_plan import plan
from matrix.cell import Cell
from matrix.model import Matrix

# What the bundle keeps per planned request: its messages in requests.json (the prompt's
# text, about 5 bytes a token with its JSON), and its journal line (its chunk times).
PROMPT_BYTES_PER_TOKEN = 5
LINE_BYTES = 2048
CHUNK_BYTES = 8  # a chunk's offset in the journal line
# Per sample: an engine scrape's line, a GPU and a host sample's; per lane start: its logs.
ENGINE_SAMPLE_BYTES = 4096
MEMORY_SAMPLE_BYTES = 1024
LANE_BYTES = 4 * 1024**2
VIEWS_BYTES = 64 * 1024**2  # comparison.json, RESULT.md, report.html with its figures
MARGIN = 2.0  # free space asked: the estimate twice over


def secret_checks(matrix: Matrix, environ: Mapping[str, str]) -> list[CheckResult]:
    found = []
    for arm in matrix.arms:
        wanted = {f"secret {lane_var}": env for lane_var, env in arm.secrets.items()}
        if arm.router is not None:
            wanted["router token"] = arm.router.token_env
        unset = [f"{env} ({what})" for what, env in wanted.items() if not environ.get(env)]
        if unset:
            found.append(
                fail(
                    "secrets",
                    arm_subject(arm.name),
                    f"{', '.join(unset)} not set in this environment; the lane or the router "
                    "call would fail after the incumbent was stopped",
                    "export them where faceoff runs (a scheduled run: the Prefect worker's "
                    "environment)",
                )
            )
        elif wanted:
            found.append(ok("secrets", arm_subject(arm.name), f"{len(wanted)} variable(s) set"))
    return found or [ok("secrets", "matrix", "no arm takes a secret")]


def program_checks(matrix: Matrix, environ: Mapping[str, str], python: str) -> list[CheckResult]:
    """Each host lane's program on the PATH its process gets: what ``faceoff run`` asks of
    every arm before the take-over (``lanes.factory.check_startable``; its secrets are the
    ``secrets`` check's)."""
    found = []
    for arm in matrix.arms:
        if arm.lane is LaneKind.DOCKER:
            continue
        knobs = LaneEnv(values=dict(arm.env), secret_names=frozenset())
        try:
            check_program(arm, knobs, environ, python)
        except FaceoffError as exc:
            found.append(fail("programs", arm_subject(arm.name), exc.what, exc.fix or ""))
            continue
        found.append(ok("programs", arm_subject(arm.name), "its program is found on its PATH"))
    return found or [ok("programs", "matrix", "every arm is a Docker lane")]


def bundle_bytes(matrix: Matrix) -> int:
    """An estimate of what the campaign writes under its folder, at its deadlines."""
    the_plan = plan(matrix)
    t = matrix.thresholds
    total = VIEWS_BYTES
    for arm_plan in the_plan.arms:
        total += LANE_BYTES * (1 + len(arm_plan.cells) // 10)  # a start, and restarts
        for cell in arm_plan.cells:
            total += _requests_bytes(cell)
            total += math.ceil(cell.deadline_s / t.engine_period_s) * ENGINE_SAMPLE_BYTES
            total += math.ceil(cell.deadline_s / t.memory_period_s) * MEMORY_SAMPLE_BYTES * 2
    return total


def _requests_bytes(cell: Cell) -> int:
    requests = cell.scored_requests + cell.warmups
    per_request = cell.peak_input_tokens * PROMPT_BYTES_PER_TOKEN + LINE_BYTES
    return requests * (per_request + cell.output_tokens * CHUNK_BYTES)


def disk_check(matrix: Matrix, workdir: Path) -> CheckResult:
    if workdir.exists() and not workdir.is_dir():
        return fail("disk", str(workdir), "is a file, not a folder", "pass a --workdir folder")
    where = existing_ancestor(workdir)
    free = shutil.disk_usage(where).free
    needed = bundle_bytes(matrix) * MARGIN
    said = f"{gib(free)} free on {where}; the bundle is estimated at {gib(needed / MARGIN)}"
    if free < needed:
        return fail(
            "disk",
            str(workdir),
            said + f", and {MARGIN:g}× that is asked",
            "free space on that disk, or give --workdir on a larger one",
        )
    return ok("disk", str(workdir), said)


def prefect_home_check(home: Path) -> CheckResult:
    """Prefect's database and the run's own server live there: it must take a file."""
    where = existing_ancestor(home)
    if not where.is_dir():
        return fail(
            "prefect_home",
            str(home),
            f"{where} is not a folder",
            "set PREFECT_HOME to a folder, or remove the file in the way",
        )
    try:
        with tempfile.NamedTemporaryFile(dir=where, prefix=".faceoff-preflight-"):
            pass
    except OSError as exc:
        return fail(
            "prefect_home",
            str(home),
            f"{where} is not writable ({exc.strerror})",
            "set PREFECT_HOME to a folder this user can write",
        )
    made = "" if where == home else f" (it will be made under {where})"
    return ok("prefect_home", str(home), "writable" + made)


def existing_ancestor(path: Path) -> Path:
    """``path``, or its nearest parent that exists (what a run would create stops there)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
