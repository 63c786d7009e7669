"""The A/A twin of a matrix (`faceoff validate --aa`, `faceoff run --aa`): the incumbent's
recipe on every arm, checked by the same rule as an `aa = true` matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from matrix.aa import aa_twin
from matrix.model import AA_OWN_FIELDS, Matrix
from matrix.toml.reader import load_matrix
from tests.foundation.cli import REPO, faceoff

EXAMPLES = REPO / "matrix" / "examples"
GLM = EXAMPLES / "glm53-exl3-vs-nvfp4.toml"
AA = EXAMPLES / "sim-aa.toml"


def recipe(matrix: Matrix, name: str) -> dict[str, object]:
    return matrix.arm(name).model_dump(exclude=set(AA_OWN_FIELDS))


def test_the_twin_runs_the_incumbents_recipe_on_every_arm_under_its_own_name() -> None:
    matrix = load_matrix(GLM)
    twin = aa_twin(matrix, where=GLM)

    assert (twin.campaign.name, twin.campaign.aa) == (f"{matrix.campaign.name}-aa", True)
    assert [(a.name, a.role, a.port) for a in twin.arms] == [
        (a.name, a.role, a.port) for a in matrix.arms
    ]
    incumbent = matrix.incumbent.name
    assert matrix.candidates[0].image != matrix.incumbent.image  # an A/B matrix to begin with
    for arm in twin.candidates:
        assert recipe(twin, arm.name) == recipe(matrix, incumbent)
    assert twin.cells == matrix.cells and twin.rule == matrix.rule


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_example_has_a_valid_twin(path: Path) -> None:
    twin = aa_twin(load_matrix(path), where=path)
    assert twin.campaign.aa and all(
        recipe(twin, a.name) == recipe(twin, twin.incumbent.name) for a in twin.arms
    )


def test_an_aa_matrix_is_its_own_twin() -> None:
    matrix = load_matrix(AA)
    assert aa_twin(matrix, where=AA) == matrix


def test_a_twin_whose_arms_would_share_an_address_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    """The candidate listens on another host with the incumbent's port: as the twin, on
    the incumbent's host, both arms would take the same port."""
    text = (EXAMPLES / "sim-faceoff.toml").read_text()
    matrix = load_matrix(EXAMPLES / "sim-faceoff.toml")
    cand, inc = matrix.candidates[0], matrix.incumbent
    moved = text.replace(f"port = {cand.port}", f'host = "127.0.0.2"\nport = {inc.port}', 1)
    path = tmp_path / "m.toml"
    path.write_text(moved)
    (tmp_path / "data").symlink_to(EXAMPLES / "data")  # the fidelity corpus it names
    load_matrix(path)  # valid as an A/B matrix

    with pytest.raises(FaceoffError) as refused:
        aa_twin(load_matrix(path), where=path)
    assert refused.value.where == str(path) and "both listen on" in refused.value.message

    result = faceoff("validate", "--aa", str(path))
    assert result.returncode == 2 and result.stdout == ""
    [said] = result.stderr.splitlines()
    assert said.startswith(f"error: {path}: its A/A twin") and "Traceback" not in result.stderr


def test_validate_aa_prints_what_would_run() -> None:
    result = faceoff("validate", "--aa", str(GLM))
    assert result.returncode == 0, result.stderr
    matrix = load_matrix(GLM)
    said = f"A/A: campaign {matrix.campaign.name}-aa runs arm {matrix.incumbent.name}'s recipe"
    assert said in result.stdout
    assert "42 cell runs, 21 matched pairs" in result.stdout and "matrix id: " in result.stdout

    plan = json.loads(faceoff("validate", "--aa", "--json", str(GLM)).stdout)
    assert plan["campaign"] == f"{matrix.campaign.name}-aa"
    assert {a["image"] for a in plan["arms"]} == {matrix.incumbent.image}
    plain = json.loads(faceoff("validate", "--json", str(GLM)).stdout)
    assert plan["matrix_id"] != plain["matrix_id"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["validate", "--aa"], "Missing argument"),
        (["validate", "--aa", "no-such.toml"], "matrix file not found"),
        (["validate", "--aa=yes", str(GLM)], "--aa"),
        (["run", "--aa"], "Missing argument"),
    ],
)
def test_aa_usage_errors_are_one_error_line_and_exit_2(args: list[str], says: str) -> None:
    result = faceoff(*args)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and says in result.stderr.splitlines()[0]
