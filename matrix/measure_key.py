"""What a cell's *spread* depends on, hashed: the key that finds its earlier nights.

A cell's variance (how far its requests scatter, and so how wide its ratio interval is at a
given n) depends on the workload it sends and on the incumbent that serves it: the cell as
written but for its id, size and deadlines (kind, input, concurrency, load shape, sampling,
variants, its SLO), and the incumbent arm's recipe but for its name and address (image,
command, flags, env, probes, recipe facts). It does not depend on the candidate, the prompts'
seed or namespace (a nightly campaign draws new ones under its dated name), the number of
requests or which replicate it is, so those are left out: equal keys, the same spread
(``evidence.history.variance``). ``matrix.cell_content`` is the narrower key a successor
campaign reuses a cell under.
"""

from __future__ import annotations

from typing import Any

from faceoff.canonical import content_sha256
from faceoff.formats.frozen_matrix import FrozenMatrix

CELL_EXCLUDED = frozenset(
    {"id", "requests", "warmups", "deadline_s", "request_deadline_s", "arms", "replicate"}
)
ARM_EXCLUDED = frozenset({"name", "role", "host", "port"})


def measure_content(frozen: FrozenMatrix, cell_id: str) -> dict[str, Any]:
    """The content of one cell's spread (KeyError when the matrix has no such cell)."""
    matrix = frozen.matrix
    cell = next((c for c in matrix.cells if c.id == cell_id), None)
    if cell is None:
        raise KeyError(cell_id)
    slo = matrix.slo_of(cell)
    return {
        "cell": cell.model_dump(mode="json", exclude=set(CELL_EXCLUDED)),
        "incumbent": matrix.incumbent.model_dump(mode="json", exclude=set(ARM_EXCLUDED)),
        "slo": slo.model_dump(mode="json") if slo is not None else None,
    }


def measure_key(frozen: FrozenMatrix, cell_id: str) -> str:
    """sha256 of the cell's spread content: equal keys, the same workload on the same incumbent."""
    return content_sha256(measure_content(frozen, cell_id))
