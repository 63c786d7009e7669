"""The declared decision rule in the matrix: its TOML syntax, what it may name, and a
frozen id that an undeclared rule leaves unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.formats.frozen_matrix import freeze
from matrix.cell import sampling_for
from matrix.rule import NotAccepted
from matrix.rule_warnings import rule_warnings
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.cli import REPO, faceoff
from tests.foundation.output_schemas import shaped
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
    "unknown-rule-candidate": (
        '[rule]\ncandidates = ["old"]\n' + CRITERION[len("[rule]\n") :] + "superiority = 0.1\n",
        "rule.candidates: names unknown ['old']; known: new",
    ),
    "criterion-candidate-outside-the-rule": (
        CRITERION + 'superiority = 0.1\ncandidates = ["nobody"]\n',
        "rule.criteria[0].candidates: names unknown ['nobody']",
    ),
    "p50-of-output-throughput-only": (
        CRITERION.replace("ttft_s", "output_tps") + 'statistic = "p95"\nsuperiority = 0.1\n',
        "rule.criteria[0].statistic: rule metric output_tps is a cell figure",
    ),
    "goodput-without-slo": (
        '[rule]\n[[rule.criteria]]\nmetric = "goodput_rps"\nnon_inferiority = 0.05\n',
        "rule.criteria[0].metric: the criterion on goodput_rps judges cells without an SLO "
        "(natural-1024-c1)",
    ),
    "energy-without-gpus": (
        '[rule]\n[[rule.criteria]]\nmetric = "energy_per_token_j"\nsuperiority = 0.1\n',
        "rule.criteria[0].metric: the criterion on energy_per_token_j compares arms without GPU "
        "ids (old, new), whose energy is not measured; give them gpu_ids",
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


def test_an_energy_criterion_judges_arms_with_gpu_ids_and_goodput_per_joule_needs_an_slo(
    tmp_path: Path,
) -> None:
    text = MINIMAL.replace('served_model = "m"\n', 'served_model = "m"\ngpu_ids = [0, 1]\n')
    energy = '[rule]\n[[rule.criteria]]\nmetric = "energy_per_token_j"\nnon_inferiority = 0.05\n'
    rule = load_matrix(write(tmp_path, text + energy)).rule
    assert rule is not None and rule.criteria[0].on_energy and rule.criteria[0].on_cell_figure
    assert not rule.criteria[0].on_goodput
    per_joule = energy.replace("energy_per_token_j", "goodput_per_joule")
    with pytest.raises(MatrixError, match="goodput_per_joule judges cells without an SLO"):
        load_matrix(write(tmp_path, text + per_joule))
    with_slo = text.replace("seed = 7\n", "seed = 7\nslo = { ttft_ms = 800 }\n")
    ruled = load_matrix(write(tmp_path, with_slo + per_joule)).rule
    assert ruled is not None and ruled.criteria[0].on_goodput


def test_a_rule_may_name_a_replicated_cell_by_the_id_it_was_written_under(
    tmp_path: Path,
) -> None:
    text = MINIMAL.replace("requests = 2\n", "requests = 2\nreplicates = 2\n")
    text += '[rule]\ncells = ["natural-1024-c1"]\n[[rule.criteria]]\nmetric = "ttft_s"\n'
    text += 'non_inferiority = 0.05\ncells = ["natural-1024-c1-r2"]\n'
    matrix = load_matrix(write(tmp_path, text))
    assert [c.id for c in matrix.cells] == ["natural-1024-c1-r1", "natural-1024-c1-r2"]
    assert matrix.rule is not None and matrix.rule.cells == ["natural-1024-c1"]


NEEDLE = '\n[[cells]]\nkind = "needle"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 2\n'
OUTPUT_TPS = '[rule]\n[[rule.criteria]]\nmetric = "output_tps"\nsuperiority = 0.1\n'


def test_output_throughput_is_a_rule_metric_that_needs_no_slo(tmp_path: Path) -> None:
    rule = load_matrix(write(tmp_path, MINIMAL + OUTPUT_TPS)).rule
    assert rule is not None and rule.criteria[0].on_cell_figure
    assert not rule.criteria[0].on_goodput


def test_a_rule_that_counts_probe_cells_is_warned_of(tmp_path: Path) -> None:
    """On the real engine a needle a random-weight model cannot recall failed its cell and
    left a rule about natural cells without a decision; now the counted cells are the judged
    ones, and a rule that still counts a probe says so."""
    every_kind = load_matrix(write(tmp_path, MINIMAL + NEEDLE + OUTPUT_TPS))
    (warning,) = rule_warnings(every_kind)
    assert warning.finding.startswith(
        "rule.criteria: the rule counts probe cells needle-1024-c1 (needle)"
    )
    natural = OUTPUT_TPS + 'kinds = ["natural"]\n'
    assert rule_warnings(load_matrix(write(tmp_path, MINIMAL + NEEDLE + natural))) == []
    named = natural.replace("[rule]\n", '[rule]\ncells = ["natural-1024-c1", "needle-1024-c1"]\n')
    (warning,) = rule_warnings(load_matrix(write(tmp_path, MINIMAL + NEEDLE + named)))
    assert warning.finding.startswith("rule.cells: the rule counts probe cells needle-1024-c1")
    ignoring = OUTPUT_TPS.replace("[rule]\n", '[rule]\nnot_accepted = "ignore"\n')
    assert rule_warnings(load_matrix(write(tmp_path, MINIMAL + NEEDLE + ignoring))) == []


DATASET = (
    '\n[[cells]]\nid = "sharegpt-c2"\nkind = "dataset"\ninput_tokens = 2048\nconcurrency = 2\n'
    f'requests = 4\ndataset = {{ file = "{REPO}/matrix/examples/data/sharegpt-50.json", '
    'format = "sharegpt" }\n'
)


def test_replayed_traffic_is_not_a_probe_the_rule_is_warned_of(tmp_path: Path) -> None:
    """Dataset and trace cells check no answer: a model cannot fail them by what it is."""
    matrix = load_matrix(write(tmp_path, MINIMAL + DATASET + OUTPUT_TPS))
    assert [c.kind.value for c in matrix.cells] == ["natural", "dataset"]
    assert rule_warnings(matrix) == []


NO_GPUS = '\n[families.not_applicable]\ngpu_memory = "a host without GPUs"\n'


def test_validate_prints_the_warning_and_its_json_carries_it(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + NEEDLE + OUTPUT_TPS + NO_GPUS)
    shown = faceoff("validate", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "rule.criteria: the rule counts probe" in shown.stdout
    plan = shaped("validate", faceoff("validate", "--json", str(path)).stdout)
    (warning,) = [w for w in plan["warnings"] if w["check"] == "rule"]
    assert warning["status"] == "WARN" and warning["finding"].startswith("rule.criteria:")


def test_scoping_a_rule_to_candidates_keeps_the_id_of_a_rule_without(tmp_path: Path) -> None:
    """The new fields are left out of the frozen content while unset."""
    rule = load_matrix(write(tmp_path, MINIMAL + RULE)).model_dump(mode="json")["rule"]
    assert "candidates" not in rule and all("candidates" not in c for c in rule["criteria"])


EFFORT = REPO / "matrix" / "examples" / "sim-effort.toml"


def test_the_effort_example_varies_one_thing_per_candidate_and_rules_on_the_recipe() -> None:
    matrix = load_matrix(EFFORT)
    incumbent, recipe, control = matrix.arm_order()
    own = {"name", "role", "port"}
    assert incumbent.model_dump(exclude=own) == control.model_dump(exclude=own)
    assert incumbent.simulator != recipe.simulator  # the weights change, on the candidate
    for cell in matrix.cells:  # the effort change, on the control alone
        efforts = [sampling_for(cell, arm.name).reasoning_effort for arm in matrix.arm_order()]
        assert efforts == ["max", "max", "high"], cell.id
    assert matrix.rule is not None
    assert [a.name for a in matrix.candidates if matrix.rule.judges(a.name)] == [recipe.name]
    assert rule_warnings(matrix) == []
