"""Paired one-request diagnostics: what one request of a cell did on each arm's lane.

``faceoff run --diagnose CELL MATRIX`` (``flows/prefect/diagnose.py``) sends each arm's lane
one request of the cell's prompts (journaled, never scored) with ``/metrics`` scraped
around it, into ``diagnostics/<cell>/<arm>/run-<n>/`` (its files: docs/flows.md, "Paired
diagnostics"). ``diagnostic.json`` is a function of the native files and of what the flow
saw around the request (``Seen``, carried over), so the audit recomputes it (``recompute``);
its format: ``faceoff.formats.diagnostic``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

from collectors.telemetry import read_samples
from faceoff.formats.attempt.collector_samples import EngineMetrics, EngineSample
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, RequestOutcome
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.stalls import ENGINE_FILE
from faceoff.formats.diagnostic import DIAGNOSTICS_DIR, Diagnostic, Seen
from workload.journal import read_journal
from workload.metrics import request_metrics

LOG_TAIL_LINES = 40
RUN = re.compile(r"^run-(\d+)$")
NOT_RUN = "not_run"  # the status of a diagnostic whose request was never sent


def arm_dir(root: Path, cell_id: str, arm: str) -> Path:
    return Path(root) / DIAGNOSTICS_DIR / cell_id / arm


def next_run_dir(root: Path, cell_id: str, arm: str) -> Path:
    """The folder of the arm's next diagnostic run of the cell (a number never reused)."""
    folder = arm_dir(root, cell_id, arm)
    taken = [int(m[1]) for p in folder.glob("run-*") if (m := RUN.match(p.name))]
    return folder / f"run-{max(taken, default=0) + 1}"


def run_folders(root: Path) -> list[Path]:
    """Every ``diagnostics/<cell>/<arm>/run-<n>/`` folder of a bundle, in path order."""
    found = Path(root).glob(f"{DIAGNOSTICS_DIR}/*/*/run-*")
    return sorted(p for p in found if p.is_dir() and RUN.match(p.name))


def summarize(folder: Path, cell_id: str, arm: str, seen: Seen) -> Diagnostic:
    """The diagnostic of one run folder, from its native files."""
    match = RUN.match(folder.name)
    assert match is not None, folder
    plan = RequestPlan.read(folder / PLAN_NAME) if (folder / PLAN_NAME).is_file() else None
    journal = folder / JOURNAL_NAME
    lines = read_journal(journal).outcomes if journal.is_file() else []
    outcome = next((o for o in lines if o.phase is Phase.DIAGNOSTIC), None)
    engine = folder / ENGINE_FILE
    samples = read_samples(engine, EngineSample)[0] if engine.is_file() else []
    return diagnostic_of(cell_id, arm, int(match[1]), seen, plan, outcome, samples)


def recompute(folder: Path, stored: Diagnostic) -> Diagnostic:
    """What ``diagnostic.json`` must say: its cell and arm from the folder's path, its
    measures from the native files, what the flow saw carried over from ``stored``."""
    return summarize(folder, folder.parent.parent.name, folder.parent.name, stored.seen)


def diagnostic_of(  # noqa: PLR0917  (one record from its native parts)
    cell_id: str,
    arm: str,
    run: int,
    seen: Seen,
    plan: RequestPlan | None,
    outcome: RequestOutcome | None,
    samples: Sequence[EngineSample],
) -> Diagnostic:
    """Pure: one diagnostic run's record."""
    planned = plan.requests[-1] if plan is not None and plan.requests else None
    metrics = request_metrics(outcome) if outcome is not None else {}
    offsets = [us / 1000 for us in outcome.chunk_offsets_us] if outcome is not None else []
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    return Diagnostic(
        cell_id=cell_id,
        arm=arm,
        run=run,
        seen=seen,
        status=outcome.status.value if outcome is not None else NOT_RUN,
        error=outcome.error if outcome is not None else seen.why_not_run,
        finish_reason=outcome.finish_reason if outcome is not None else None,
        prompt_sha256=planned.prompt_sha256 if planned is not None else None,
        reasoning_effort=planned.reasoning_effort if planned is not None else None,
        input_tokens=planned.input_tokens if planned is not None else None,
        output_tokens=outcome.usage.completion_tokens if outcome and outcome.usage else None,
        ttft_s=metrics["ttft_s"].value if metrics else None,
        e2e_s=metrics["e2e_s"].value if metrics else None,
        tpot_s=metrics["tpot_s"].value if metrics else None,
        chunk_offsets_ms=offsets,
        max_gap_ms=max(gaps) if gaps else None,
        scrapes=[s.status.value for s in samples],
        engine_deltas=engine_deltas(samples),
    )


def engine_deltas(samples: Sequence[EngineSample]) -> dict[str, float]:
    """After minus before for every counter and histogram both scrapes carry (0: it did not
    move); {} without both scrapes."""
    if len(samples) < 2 or samples[0].metrics is None or samples[-1].metrics is None:
        return {}
    before, after = _flat(samples[0].metrics), _flat(samples[-1].metrics)
    return {name: after[name] - before[name] for name in sorted(after.keys() & before.keys())}


def _flat(metrics: EngineMetrics) -> dict[str, float]:
    flat = dict(metrics.counters)
    for name, point in metrics.histograms.items():
        flat[f"{name}_count"], flat[f"{name}_sum"] = point.count, point.sum
    return flat
