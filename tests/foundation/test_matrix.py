"""Loading, validating and freezing matrices, with errors that name the field."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from faceoff.formats.frozen_matrix import freeze, read_frozen
from matrix.campaign_plan import plan
from matrix.families import FamilyStatus
from matrix.toml.reader import MatrixError, load_matrix

EXAMPLES = Path(__file__).resolve().parents[2] / "matrix" / "examples"
GLM = EXAMPLES / "glm53-exl3-vs-nvfp4.toml"
DIGEST = "sha256:" + "ab" * 32

MINIMAL = f"""
[campaign]
name = "tiny"
seed = 7

[[arms]]
name = "old"
role = "incumbent"
lane = "docker"
image = "127.0.0.1:5000/faceoff/sim@{DIGEST}"
port = 9001
served_model = "m"

[[arms]]
name = "new"
role = "candidate"
lane = "docker"
image = "127.0.0.1:5000/faceoff/sim@{DIGEST}"
port = 9002
served_model = "m"

[[cells]]
kind = "natural"
input_tokens = 1024
concurrency = 1
requests = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


def test_glm53_example_has_the_published_plan() -> None:
    matrix = load_matrix(GLM)
    the_plan = plan(matrix)
    per_arm = {p.arm.name: p for p in the_plan.arms}
    assert [p.arm.name for p in the_plan.arms] == ["exl3-r11", "nvfp4-r2"]
    assert all(len(p.cells) == 21 for p in the_plan.arms)
    assert len(the_plan.cell_runs) == 42
    assert len(the_plan.pairs) == 21
    natural = [c for c in matrix.cells if c.kind == "natural"]
    edge = [c for c in matrix.cells if c.kind == "capacity_edge"]
    assert sorted({c.input_tokens for c in natural}) == [10240, 40960, 163840]
    assert {(c.requests, c.concurrency) for c in edge} == {(4, 1), (4, 2), (4, 4)}
    assert per_arm["exl3-r11"].warmup_requests + per_arm["nvfp4-r2"].warmup_requests == 6
    cell = matrix.cells[0]
    assert (cell.sampling.temperature, cell.sampling.top_p) == (0.6, 0.95)
    assert (cell.sampling.max_tokens, cell.deadline_s) == (16384, 1200)
    assert cell.sampling.reasoning_effort == "max"


def test_grid_cells_get_readable_ids(tmp_path: Path) -> None:
    text = MINIMAL.replace("input_tokens = 1024", "input_tokens = [1024, 2048]").replace(
        "concurrency = 1", "concurrency = [1, 2]"
    )
    ids = [c.id for c in load_matrix(write(tmp_path, text)).cells]
    assert ids == ["natural-1024-c1", "natural-1024-c2", "natural-2048-c1", "natural-2048-c2"]


def test_freeze_id_is_stable_and_changes_with_any_field(tmp_path: Path) -> None:
    base = freeze(load_matrix(write(tmp_path, MINIMAL)))
    again = freeze(load_matrix(write(tmp_path, MINIMAL)))
    assert base.matrix_id == again.matrix_id
    assert len(base.matrix_id) == 64
    variants = [
        MINIMAL.replace("seed = 7", "seed = 8"),
        MINIMAL.replace("requests = 2", "requests = 3"),
        MINIMAL.replace('served_model = "m"', 'served_model = "n"', 1),
        MINIMAL + "\n[thresholds]\nmax_preemptions = 1\n",
        MINIMAL + '\n[families.not_applicable]\ngpu_memory = "no GPUs"\n',
    ]
    ids = {freeze(load_matrix(write(tmp_path, v))).matrix_id for v in variants}
    assert base.matrix_id not in ids
    assert len(ids) == len(variants)


def test_frozen_file_round_trips_and_detects_edits(tmp_path: Path) -> None:
    frozen = freeze(load_matrix(GLM))
    path = frozen.write(tmp_path / "matrix.frozen.json")
    assert read_frozen(path).matrix_id == frozen.matrix_id
    path.write_text(path.read_text().replace('"seed": 20261017', '"seed": 1'))
    with pytest.raises(Exception, match="edited after freezing"):
        read_frozen(path)


def test_registry_is_frozen_with_not_applicable_declarations(tmp_path: Path) -> None:
    text = MINIMAL + '\n[families.not_applicable]\ngpu_memory = "host has no GPUs"\n'
    frozen = freeze(load_matrix(write(tmp_path, text)))
    statuses = [f.status for f in frozen.registry]
    assert statuses.count(FamilyStatus.REQUIRED) == 16
    assert statuses.count(FamilyStatus.SUPPLEMENTAL) == 4
    assert frozen.family("gpu_memory").not_applicable_reason == "host has no GPUs"


@pytest.mark.parametrize(
    ("edit", "field", "hint"),
    [
        (("@" + DIGEST, ":latest"), "arms[0] (name='old').image", "pinned by digest"),
        (('kind = "natural"', 'kind = "chatty"'), "(id='chatty-1024-c1').kind", "'natural'"),
        (("concurrency = 1", "concurrency = 0"), ".concurrency", "greater than or equal to 1"),
        (("seed = 7", "seed = "), "malformed TOML", "line"),
        (("[campaign]", "[campaign]\nstop_policy = 'panic'"), "campaign.stop_policy", "continue"),
    ],
)
def test_bad_input_names_the_field(
    tmp_path: Path, edit: tuple[str, str], field: str, hint: str
) -> None:
    path = write(tmp_path, MINIMAL.replace(edit[0], edit[1], 1))
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    message = info.value.message
    assert str(path) in message
    assert field in message
    assert hint in message
    assert "\n" not in message  # one paragraph


def test_inline_secret_is_refused(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        'served_model = "m"', 'served_model = "m"\nenv = { HF_TOKEN = "hf_x" }', 1
    )
    with pytest.raises(MatrixError, match=r"arms\[0\].*HF_TOKEN.*looks like a secret"):
        load_matrix(write(tmp_path, text))


def test_two_incumbents_are_refused(tmp_path: Path) -> None:
    text = MINIMAL.replace('role = "candidate"', 'role = "incumbent"')
    with pytest.raises(MatrixError, match="exactly one arm"):
        load_matrix(write(tmp_path, text))


def test_controlled_cell_needs_a_contract(tmp_path: Path) -> None:
    text = MINIMAL.replace('kind = "natural"', 'kind = "controlled"')
    with pytest.raises(MatrixError, match="output_words"):
        load_matrix(write(tmp_path, text))


def test_examples_parse_as_toml() -> None:
    for path in EXAMPLES.glob("*.toml"):
        assert tomllib.loads(path.read_text())["campaign"]["name"]
        assert load_matrix(path).campaign.name


@pytest.mark.parametrize(
    ("kind", "fields", "hint"),
    [
        ("head_of_line", "concurrency = 1", "head_of_line needs concurrency ≥ 2"),
        ("session_reuse", "requests = 3\nconcurrency = 1", "requests = 3 is odd"),
        ("session_reuse", "requests = 4\nconcurrency = 3", "at least 6 requests"),
    ],
)
def test_request_patterns_that_cannot_work_are_refused(tmp_path: Path, kind, fields, hint) -> None:  # type: ignore[no-untyped-def]
    cell = f'\n[[cells]]\nid = "x"\nkind = "{kind}"\ninput_tokens = 1024\n{fields}\n'
    if "requests" not in fields:
        cell += "requests = 4\n"
    with pytest.raises(MatrixError, match=hint) as info:
        load_matrix(write(tmp_path, MINIMAL + cell))
    assert "cells[1] (id='x')" in info.value.message


def test_the_readme_matrix_is_valid(tmp_path: Path) -> None:
    readme = (EXAMPLES.parents[1] / "README.md").read_text()
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    matrix = load_matrix(write(tmp_path, example))
    assert [a.name for a in matrix.arms] == ["exl3-r11", "nvfp4-r2"]
    assert len(matrix.cells) == 6
