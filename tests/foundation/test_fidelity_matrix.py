"""``[[fidelity]]`` in a matrix: the corpus pinned, the reference known, windows that fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from faceoff.formats.frozen_matrix import freeze
from flows.cli.script_output import order_sentence
from flows.cli.views.console import plan_table
from matrix.fidelity import (
    Corpus,
    FidelityCell,
    FidelityCriterion,
    check_fidelity,
    check_fidelity_criteria,
    check_logprobs,
    vllm_logprobs_cap,
)
from matrix.fields import FieldError
from matrix.model import changed_sources
from matrix.rule_warnings import rule_warnings
from matrix.toml.reader import MatrixError, load_matrix

EXAMPLE = Path(__file__).resolve().parents[2] / "matrix" / "examples" / "sim-faceoff.toml"
PINNED = 'sha256 = "647ddd390a3ff8635796c02fbae93e772b722a5098691ccda7475091b43b875d"'


def written(tmp_path: Path, text: str) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    corpus = EXAMPLE.parent / "data" / "fidelity-corpus.txt"
    (tmp_path / "data" / corpus.name).write_bytes(corpus.read_bytes())
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


def test_the_demo_scores_the_candidate_against_the_incumbent(tmp_path: Path) -> None:
    matrix = load_matrix(written(tmp_path, EXAMPLE.read_text()))
    (cell,) = matrix.fidelity
    assert matrix.fidelity_reference.name == "exl3-r11"
    assert [a.name for a in matrix.fidelity_arms(cell)] == ["exl3-r11", "nvfp4-r2"]
    assert cell.step == cell.input_tokens == 128 and cell.prompt_logprobs == 20


def test_validate_shows_a_reference_arm_in_its_table_and_first_in_the_order(
    tmp_path: Path,
) -> None:
    frozen = freeze(load_matrix(with_reference(tmp_path)))
    console = Console(record=True, width=200)
    console.print(plan_table(frozen))
    rows = [line for line in console.export_text().splitlines() if "reference" in line]
    assert len(rows) == 1 and "bf16" in rows[0] and "1 fidelity only" in rows[0]
    assert "never at once: bf16 then exl3-r11 then nvfp4-r2," in order_sentence(frozen.matrix)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (PINNED, 'sha256 = "' + "0" * 64 + '"', "hashes to 647ddd39"),
        ('stop_policy = "block_workload"', 'stop_policy = "block_workload"\n'
         'fidelity_reference = "bf16"', "fidelity_reference: names no arm"),
        ("greedy_tokens = 16", 'greedy_tokens = 16\narms = ["nvfp4-r2"]',
         "leaves out the fidelity reference 'exl3-r11'"),
        ('id = "fidelity-corpus"', 'id = "prefill-probe-31600-c1"', "is already a cell id"),
        ("greedy_prompts = 4", "greedy_prompts = 40", "40 greedy prompts but 12 windows"),
    ],
)  # fmt: skip
def test_bad_fidelity_cells_are_refused_at_validate(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = EXAMPLE.read_text()
    assert old in text
    with pytest.raises(MatrixError, match=message):
        load_matrix(written(tmp_path, text.replace(old, new, 1)))


def test_a_corpus_changed_since_freezing_is_named(tmp_path: Path) -> None:
    frozen = load_matrix(written(tmp_path, EXAMPLE.read_text().replace(", " + PINNED, "", 1)))
    (tmp_path / "data" / "fidelity-corpus.txt").write_text("another corpus\n")
    current = load_matrix(tmp_path / "m.toml")
    assert len(changed_sources(frozen, current)) == 1
    assert "fidelity cell fidelity-corpus" in changed_sources(frozen, current)[0]


def test_a_window_beyond_an_arms_declared_context_is_refused() -> None:
    cell = FidelityCell(
        id="fid",
        corpus=Corpus(file="c.txt", sha256="0" * 64),
        input_tokens=4096,
        windows=2,
        greedy_prompts=2,
    )
    check_fidelity([cell], {"ref": None, "cand": 8192}, "ref", set())
    with pytest.raises(FieldError, match="exceed arm 'cand''s max_model_len = 4096"):
        check_fidelity([cell], {"ref": None, "cand": 4096}, "ref", set())


def test_fidelity_criteria_name_fidelity_cells_and_need_one() -> None:
    criterion = FidelityCriterion(metric="kld_mean", limit=0.03, cells=["fid"])
    check_fidelity_criteria([criterion], ["fid"])
    with pytest.raises(FieldError, match="no \\[\\[fidelity\\]\\] cell"):
        check_fidelity_criteria([criterion], [])
    with pytest.raises(FieldError, match="names unknown \\['fid'\\]"):
        check_fidelity_criteria([criterion], ["other"])


REFERENCE_ARM = """[[arms]]
name = "bf16"
role = "reference"
lane = "simulator"
port = 18103
served_model = "glm-5.3-flash"
[arms.simulator]
profile = "exl3-r11"

[defaults]"""


def with_reference(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = EXAMPLE.read_text().replace("[defaults]", REFERENCE_ARM, 1)
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    return written(tmp_path, text)


def test_a_reference_arm_is_scored_against_first_and_runs_no_speed_cell(tmp_path: Path) -> None:
    matrix = load_matrix(with_reference(tmp_path))
    reference = matrix.arm("bf16")
    assert matrix.fidelity_reference is reference and matrix.reference_arms == [reference]
    assert [a.name for a in matrix.fidelity_arms(matrix.fidelity[0])] == [
        "bf16", "exl3-r11", "nvfp4-r2",
    ]  # fmt: skip
    assert matrix.cells_for(reference) == [] and reference not in matrix.arm_order()
    assert all(reference not in matrix.arms_of(c) for c in matrix.cells)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('stop_policy = "block_workload"', 'stop_policy = "block_workload"\n'
          'fidelity_reference = "nvfp4-r2"'), "names the candidate 'nvfp4-r2'"),
        (("requests = 3\nsampling", 'requests = 3\narms = ["bf16"]\nsampling'),
         "reference arm 'bf16' is named by speed cells"),
        (('stop_policy = "block_workload"', 'stop_policy = "block_workload"\n'
          'fidelity_reference = "exl3-r11"'), "is a reference but fidelity_reference names"),
    ],
)  # fmt: skip
def test_a_reference_arm_that_would_be_a_speed_arm_or_a_candidate_is_refused(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    with pytest.raises(MatrixError, match=message):
        load_matrix(with_reference(tmp_path, edit))


def test_a_vllm_arm_asked_more_logprobs_than_its_serve_line_allows_is_refused() -> None:
    assert vllm_logprobs_cap(["vllm", "serve", "/m"]) == 20
    assert vllm_logprobs_cap(["vllm", "serve", "/m", "--max-logprobs", "3072"]) == 3072
    assert vllm_logprobs_cap(["vllm", "serve", "/m", "--max-logprobs=-1"]) is None
    cell = FidelityCell(
        id="fid", corpus=Corpus(file="c.txt", sha256="0" * 64), input_tokens=64, windows=2,
        greedy_prompts=2, prompt_logprobs=64,
    )  # fmt: skip
    check_logprobs([cell], {"ref": 3072, "cand": None})
    with pytest.raises(FieldError, match="exceeds arm 'cand''s --max-logprobs 20"):
        check_logprobs([cell], {"ref": 3072, "cand": 20})


def test_a_fidelity_limit_on_too_few_windows_is_warned_of_before_the_night(
    tmp_path: Path,
) -> None:
    assert rule_warnings(load_matrix(written(tmp_path, EXAMPLE.read_text()))) == []  # 12 windows
    few = EXAMPLE.read_text().replace("windows = 12\n", "windows = 8\n", 1)
    kld, top1 = rule_warnings(load_matrix(written(tmp_path, few)))
    assert kld.finding == (
        "rule.fidelity[0]: kld_mean on fidelity cell fidelity-corpus rests on 8 windows, fewer "
        "than the 12 its interval is calibrated at: the figure is descriptive and the limit "
        "decides nothing"
    )
    assert top1.finding.startswith("rule.fidelity[1]: top1_agreement")
    assert kld.fix == "give fidelity cell fidelity-corpus windows = 12 or more"
