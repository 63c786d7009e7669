"""A bundle's shape: the files it holds and the keys of its ``comparison.json``, values left
out, so two bundles of one matrix compare equal whatever their numbers.

``python -m tests.faceoff.formats.bundle_shape BUNDLE > shape.json`` prints the shape of
BUNDLE: run the demo before and after a move of the formats (a module renamed, a model
split) and diff the two shapes to see that the files a campaign writes are as they were. A
whole demo takes minutes and a blocked cell changes its files, so this is a step of such a
change (docs/testing.md), not a test of every run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

NOT_BUNDLE = (".run.lock",)  # the run's lock, beside the bundle's files while it runs


def bundle_files(bundle: Path) -> list[str]:
    """Every file of the bundle, relative and sorted (the lock of a run aside)."""
    files = (p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    return sorted(f for f in files if f not in NOT_BUNDLE)


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Each key of a JSON value as a dotted path; a list's items share one ``[]`` path."""
    if isinstance(value, dict):
        named = {f"{prefix}.{k}" if prefix else k: v for k, v in value.items()}
        return set(named).union(*(key_paths(v, path) for path, v in named.items()))
    if isinstance(value, list):
        return set().union(*(key_paths(v, f"{prefix}[]") for v in value))
    return set()


def bundle_shape(bundle: Path) -> dict[str, list[str]]:
    comparison = json.loads((bundle / "comparison.json").read_text(encoding="utf-8"))
    return {"files": bundle_files(bundle), "comparison_keys": sorted(key_paths(comparison))}


if __name__ == "__main__":
    print(json.dumps(bundle_shape(Path(sys.argv[1])), indent=1))
