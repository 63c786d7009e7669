"""A cell's own frozen content: what its measurement depends on, hashed per cell.

The matrix id hashes the whole matrix; a successor campaign (``successor_of``) may reuse a
closed campaign's accepted cell when this narrower content is unchanged: the cell as
written, every arm that runs it (recipe, image digest, flags, env, probes: the whole arm),
the seed and prompt namespace its prompts are drawn under, the SLO it is judged by, the
validity thresholds and the family registry its guard applies, and how the client waited for
bytes where it spun (left out for the default, so keys made before it are unchanged). The
campaign's name, its other cells and arms, its stop policy, rule and quality imports are not
part of it.
"""

from __future__ import annotations

from typing import Any

from faceoff.canonical import content_sha256
from faceoff.formats.frozen_matrix import FrozenMatrix

MAX_SHOWN = 4  # changed fields named in a reason before "…"


def cell_content(frozen: FrozenMatrix, cell_id: str) -> dict[str, Any]:
    """The content of one cell of the frozen matrix (KeyError when it has no such cell)."""
    matrix = frozen.matrix
    cell = next((c for c in matrix.cells if c.id == cell_id), None)
    if cell is None:
        raise KeyError(cell_id)
    slo = matrix.slo_of(cell)
    arms = [a for a in matrix.arm_order() if cell.arms is None or a.name in cell.arms]
    return {
        "cell": cell.model_dump(mode="json"),
        "arms": {a.name: a.model_dump(mode="json") for a in arms},
        "prompts": {"seed": matrix.campaign.seed, "namespace": matrix.campaign.namespace},
        "slo": slo.model_dump(mode="json") if slo is not None else None,
        "thresholds": matrix.thresholds.model_dump(mode="json"),
        "registry": [f.model_dump(mode="json") for f in frozen.registry],
    } | _client(matrix.campaign.client_receive)


def _client(receive: str) -> dict[str, Any]:
    """A spinning client dates chunks differently: its cells are not a sleeping one's."""
    return {} if receive == "sleep" else {"client_receive": receive}


def cell_key(frozen: FrozenMatrix, cell_id: str) -> str:
    """sha256 of the cell's content: equal keys, the same cell."""
    return content_sha256(cell_content(frozen, cell_id))


def content_changes(old: FrozenMatrix, new: FrozenMatrix, cell_id: str) -> list[str]:
    """The dotted fields of the cell's content that differ, as ``field: old → new``."""
    return [
        f"{path}: {_shown(was)} → {_shown(now)}"
        for path, was, now in _differences(cell_content(old, cell_id), cell_content(new, cell_id))
    ]


def changes_sentence(changes: list[str]) -> str:
    shown = "; ".join(changes[:MAX_SHOWN])
    more = f"; and {len(changes) - MAX_SHOWN} more" if len(changes) > MAX_SHOWN else ""
    return shown + more


def _differences(was: Any, now: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(was, dict) and isinstance(now, dict):
        found = []
        for key in sorted(set(was) | set(now)):
            found += _differences(was.get(key), now.get(key), f"{path}.{key}" if path else key)
        return found
    return [] if was == now else [(path, was, now)]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
