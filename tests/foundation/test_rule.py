"""The declared decision rule in the matrix: its TOML syntax, what it may name, and a
frozen id that an undeclared rule leaves unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.freeze import freeze
from matrix.rule import NotAccepted
from matrix.toml_reader import load_matrix
from tests.foundation.test_bad_input import assert_short_error, run_main
from tests.foundation.test_matrix import MINIMAL, write

RULE = """
[rule]
not_accepted = "ignore"

[[rule.criteria]]
metric = "ttft_s"
statistic = "p95"
non_inferiority = 0.05
kinds = ["natural"]

[[rule.criteria]]
metric = "decode_tps"
superiority = 0.10
cells = ["natural-1024-c1"]
"""


def test_a_rule_reads_from_the_matrix_and_is_frozen_with_it(tmp_path: Path) -> None:
    plain = load_matrix(write(tmp_path, MINIMAL))
    ruled = load_matrix(write(tmp_path, MINIMAL + RULE))
    assert ruled.rule is not None and ruled.rule.not_accepted is NotAccepted.IGNORE
    ttft, decode = ruled.rule.criteria
    assert (ttft.metric, ttft.non_inferiority, ttft.kinds) == ("ttft_s", 0.05, ["natural"])
    assert (decode.superiority, decode.cells) == (0.10, ["natural-1024-c1"])
    assert (ttft.statistic, decode.statistic) == ("p95", "p50")
    assert ruled.rule.tail_metrics() == ["ttft_s"]  # whose p95 ratios the evidence computes
    assert freeze(ruled).matrix_id != freeze(plain).matrix_id
    assert freeze(ruled).matrix.rule == ruled.rule


def test_an_undeclared_rule_is_left_out_of_the_frozen_content(tmp_path: Path) -> None:
    """Matrices frozen before rules existed keep their ids: the id hashes this dump."""
    assert "rule" not in load_matrix(write(tmp_path, MINIMAL)).model_dump(mode="json")


CRITERION = '[rule]\n[[rule.criteria]]\nmetric = "ttft_s"\n'
BAD_RULES = {
    "unknown-metric": (
        '[rule]\n[[rule.criteria]]\nmetric = "ttft_p95"\nnon_inferiority = 0.05\n',
        "rule metric 'ttft_p95' is not judged",
    ),
    "neither-margin-nor-target": (CRITERION, "needs exactly one of non_inferiority"),
    "margin-and-target": (
        CRITERION + "non_inferiority = 0.05\nsuperiority = 0.1\n",
        "needs exactly one of non_inferiority",
    ),
    "margin-of-100-percent": (CRITERION + "non_inferiority = 1.0\n", "non_inferiority"),
    "unknown-cell": (
        CRITERION + 'superiority = 0.1\ncells = ["natural-9-c1"]\n',
        "names unknown ['natural-9-c1']",
    ),
    "unknown-kind": (CRITERION + 'superiority = 0.1\nkinds = ["chat"]\n', "unknown ['chat']"),
    "unknown-policy": (
        '[rule]\nnot_accepted = "promote"\n[[rule.criteria]]\nmetric = "ttft_s"\n'
        "superiority = 0.1\n",
        "not_accepted",
    ),
    "p95-of-goodput": (
        '[rule]\n[[rule.criteria]]\nmetric = "goodput_rps"\nstatistic = "p95"\n'
        "non_inferiority = 0.05\n",
        "goodput_rps is a cell figure with no percentiles",
    ),
    "p90": (CRITERION + 'statistic = "p90"\nsuperiority = 0.1\n', "statistic"),
    "goodput-without-slo": (
        '[rule]\n[[rule.criteria]]\nmetric = "goodput_rps"\nnon_inferiority = 0.05\n',
        "judges cells without an SLO (natural-1024-c1)",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_RULES))
def test_a_bad_rule_is_one_short_error_naming_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    text, expected = BAD_RULES[name]
    path = write(tmp_path, MINIMAL + text)
    code, out, err = run_main(["validate", str(path)], monkeypatch, capsys)
    assert_short_error(code, err)
    assert str(path) in err and expected in err, err
    assert out == ""


def test_a_goodput_criterion_is_accepted_where_the_campaign_declares_an_slo(
    tmp_path: Path,
) -> None:
    text = MINIMAL.replace("seed = 7\n", "seed = 7\nslo = { ttft_ms = 800 }\n")
    text += '[rule]\n[[rule.criteria]]\nmetric = "goodput_rps"\nnon_inferiority = 0.05\n'
    rule = load_matrix(write(tmp_path, text)).rule
    assert rule is not None and rule.criteria[0].on_goodput


def test_a_rule_may_name_a_replicated_cell_by_the_id_it_was_written_under(
    tmp_path: Path,
) -> None:
    text = MINIMAL.replace("requests = 2\n", "requests = 2\nreplicates = 2\n")
    text += '[rule]\ncells = ["natural-1024-c1"]\n[[rule.criteria]]\nmetric = "ttft_s"\n'
    text += 'non_inferiority = 0.05\ncells = ["natural-1024-c1-r2"]\n'
    matrix = load_matrix(write(tmp_path, text))
    assert [c.id for c in matrix.cells] == ["natural-1024-c1-r1", "natural-1024-c1-r2"]
    assert matrix.rule is not None and matrix.rule.cells == ["natural-1024-c1"]
