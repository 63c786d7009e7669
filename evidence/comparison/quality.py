"""Quality evidence beside speed: evaluator results imported into the bundle and judged.
The same concept at another layer: ``evidence.views.card.quality``, ``matrix.quality``.

``import_quality`` copies each ``[[quality]]`` result file of the matrix into the
bundle (``quality/<name>/<arm>.json``) once, so the bundle's sums cover it and an
audit recomputes the verdicts from the copy; later edits of the operator's file do not
change a sealed bundle. ``read_quality`` hashes and parses the copies (every number of
the JSON, keys joined by ``/``); ``quality_results`` judges each band, pure: a
candidate whose metric trails the incumbent's by more than the tolerance, or whose
metric cannot be read, is not promotable, and the card says so naming the metric.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faceoff.bounded import read_json
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.quality_results import QualityCheck, QualityFile, QualityResult
from matrix.quality import QualityBand, QualityImport

QUALITY_DIR = "quality"


@dataclass(frozen=True)
class LoadedResult:
    file: QualityFile
    values: dict[str, float]


def copy_path(root: Path, name: str, arm: str) -> Path:
    return root / QUALITY_DIR / name / f"{arm}.json"


def import_quality(root: Path, imports: list[QualityImport]) -> None:
    """Copy each result file into the bundle unless a copy is there already."""
    for entry in imports:
        for arm, source in entry.results.items():
            target = copy_path(root, entry.name, arm)
            if target.exists() or not Path(source).is_file():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            shutil.copyfile(source, partial)
            partial.replace(target)


def read_quality(root: Path, imports: list[QualityImport]) -> dict[tuple[str, str], LoadedResult]:
    """Each import's copy per arm, hashed and flattened to its numbers."""
    return {
        (entry.name, arm): _load(root, entry, arm) for entry in imports for arm in entry.results
    }


def _load(root: Path, entry: QualityImport, arm: str) -> LoadedResult:
    path = copy_path(root, entry.name, arm)
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        problem = f"no result file was imported (the matrix names {entry.results[arm]})"
        return LoadedResult(QualityFile(arm=arm, path=rel, sha256=None, problem=problem), {})
    digest = None
    try:
        digest = file_sha256(path)
        values = flatten(read_json(path))
    except FaceoffError as exc:  # a FIFO, over its cap, not JSON, nested too deep
        problem = exc.what
        return LoadedResult(QualityFile(arm=arm, path=rel, sha256=digest, problem=problem), {})
    return LoadedResult(QualityFile(arm=arm, path=rel, sha256=digest, problem=None), values)


def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    """Every number in a JSON document, keyed by its path (keys and indices joined by '/')."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, int | float):
        return {prefix: float(value)}
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(value)]
    found: dict[str, float] = {}
    for key, child in items:
        found |= flatten(child, f"{prefix}/{key}" if prefix else key)
    return found


def quality_results(
    imports: list[QualityImport],
    incumbent: str,
    loaded: Mapping[tuple[str, str], LoadedResult],
) -> list[QualityResult]:
    """Every import's files and, per candidate and band, whether it is inside the band."""
    results = []
    for entry in imports:
        base = loaded[(entry.name, incumbent)]
        checks = [
            check(band, arm, base, loaded[(entry.name, arm)])
            for arm in entry.results
            if arm != incumbent
            for band in entry.bands
        ]
        files = [loaded[(entry.name, arm)].file for arm in entry.results]
        results.append(
            QualityResult(name=entry.name, evaluator=entry.evaluator, files=files, checks=checks)
        )
    return results


def check(band: QualityBand, arm: str, base: LoadedResult, theirs: LoadedResult) -> QualityCheck:
    inc, cand = base.values.get(band.metric), theirs.values.get(band.metric)
    if inc is None or cand is None:
        missing = [
            f"{name}'s {r.file.path}" + (f" ({r.file.problem})" if r.file.problem else "")
            for name, r, v in ((base.file.arm, base, inc), (arm, theirs, cand))
            if v is None
        ]
        sentence = f"{band.metric} could not be read from {' and '.join(missing)}"
        return _check(band, arm, (inc, cand), None, sentence)
    shortfall = inc - cand if band.higher_is_better else cand - inc
    within = shortfall <= band.tolerance
    word = "trails" if shortfall > 0 else "does not trail"
    sentence = (
        f"{arm} {word} the incumbent on {band.metric}: {cand:g} against {inc:g} "
        f"({'higher' if band.higher_is_better else 'lower'} is better; the band allows "
        f"{band.tolerance:g}){'' if within else ', outside the band'}"
    )
    return _check(band, arm, (inc, cand), shortfall, sentence)


def _check(
    band: QualityBand,
    arm: str,
    values: tuple[float | None, float | None],
    shortfall: float | None,
    sentence: str,
) -> QualityCheck:
    inc, cand = values
    within = None if shortfall is None else shortfall <= band.tolerance
    return QualityCheck(
        candidate=arm,
        metric=band.metric,
        higher_is_better=band.higher_is_better,
        tolerance=band.tolerance,
        incumbent=inc,
        candidate_value=cand,
        shortfall=shortfall,
        within=within,
        sentence=sentence,
    )
