"""The A/A twin of a matrix: the incumbent's recipe on every arm (``faceoff validate --aa``,
``faceoff run --aa``).
The same concept at another layer: ``evidence.comparison.aa``.

Each candidate arm becomes a copy of the incumbent that keeps only the candidate's own
name, role and port (``model.AA_OWN_FIELDS``), so cells, the decision rule and the quality
section that name arms still name the same ones; the campaign is marked ``aa = true`` and
named ``<name>-aa``, so that its ledger rows and evidence never mix with the A/B
campaign's. A matrix that is already an A/A campaign is its own twin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from faceoff.errors import FaceoffError
from matrix.arm import Role
from matrix.model import AA_OWN_FIELDS, Matrix
from matrix.toml.reader import check_host

AA_SUFFIX = "-aa"


def aa_twin(matrix: Matrix, *, where: Path) -> Matrix:
    """``matrix`` with every candidate running the incumbent's recipe; errors name ``where``."""
    if matrix.campaign.aa:
        return matrix
    data = matrix.model_dump(mode="json")
    data["campaign"]["name"] = f"{matrix.campaign.name}{AA_SUFFIX}"
    data["campaign"]["aa"] = True
    data["arms"] = [_twin_arm(arm, data["arms"]) for arm in data["arms"]]
    try:
        twin = Matrix.model_validate(data)
        check_host(twin)
    except ValidationError as exc:
        why = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise _refused(where, why) from exc
    except ValueError as exc:
        raise _refused(where, str(exc)) from exc
    return twin


def _twin_arm(arm: dict[str, Any], arms: list[dict[str, Any]]) -> dict[str, Any]:
    if arm["role"] == Role.INCUMBENT.value:
        return arm
    [incumbent] = [a for a in arms if a["role"] == Role.INCUMBENT.value]
    recipe = {k: v for k, v in incumbent.items() if k not in AA_OWN_FIELDS}
    return recipe | {k: v for k, v in arm.items() if k in AA_OWN_FIELDS}


def _refused(where: Path, why: str) -> FaceoffError:
    return FaceoffError(
        f"its A/A twin (the incumbent's recipe on every arm) is not a valid matrix: {why}",
        where=str(where),
        fix="give each candidate a port of its own on the incumbent's host, and a campaign "
        f"name short enough for the {AA_SUFFIX!r} suffix",
    )


def aa_line(twin: Matrix) -> str:
    """One line saying what the A/A twin runs."""
    incumbent = twin.incumbent
    arms = ", ".join(f"{a.name} (port {a.port})" for a in twin.arm_order())
    return (
        f"A/A: campaign {twin.campaign.name} runs arm {incumbent.name}'s recipe "
        f"({incumbent.lane.value} lane, model {incumbent.served_model}) on every arm: {arms}"
    )
