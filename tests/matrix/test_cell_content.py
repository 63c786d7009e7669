"""A cell's own frozen content (matrix/cell_content.py): what a successor campaign compares
to decide whether a closed campaign's accepted cell can be carried over."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from matrix.cell_content import cell_key, changes_sentence, content_changes
from matrix.model import Matrix

KEPT, OTHER = "natural-600-c1", "natural-600-c2"


def data(name: str, **campaign: Any) -> dict[str, Any]:
    simulator = {"profile": "tiny"}
    cell = {"kind": "natural", "input_tokens": 600, "requests": 4, "concurrency": 1}
    return {
        "campaign": {"name": name, "seed": 11, "prompt_namespace": "ns", **campaign},
        "arms": [
            {"name": "inc", "role": "incumbent", "lane": "simulator", "port": 18001,
             "served_model": "m", "simulator": simulator},
            {"name": "cand", "role": "candidate", "lane": "simulator", "port": 18002,
             "served_model": "m", "simulator": simulator},
        ],
        "cells": [cell | {"id": KEPT}, cell | {"id": OTHER, "arms": ["inc"]}],
    }  # fmt: skip


def frozen(values: dict[str, Any]) -> FrozenMatrix:
    return freeze(Matrix.model_validate(values))


def test_another_name_stop_policy_or_cell_leaves_the_key_unchanged() -> None:
    old = frozen(data("old"))
    new_data = data("new", successor_of="old", stop_policy="continue", client_receive="sleep")
    new_data["cells"][1]["requests"] = 8
    new = frozen(new_data)
    assert old.matrix_id != new.matrix_id
    assert cell_key(old, KEPT) == cell_key(new, KEPT)
    assert content_changes(old, new, KEPT) == []
    assert content_changes(old, new, OTHER) == ["cell.requests: 4 → 8"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d["cells"][0].update(requests=6), "cell.requests: 4 → 6"),
        (lambda d: d["arms"][1].update(engine_args=["--x"]), "arms.cand.engine_args: [] → ['--x']"),
        (lambda d: d["campaign"].update(seed=12), "prompts.seed: 11 → 12"),
        (lambda d: d["campaign"].pop("prompt_namespace"), "prompts.namespace: 'ns' → 'old'"),
        (lambda d: d.update(thresholds={"max_oom": 1}), "thresholds.max_oom: 0 → 1"),
        (lambda d: d["campaign"].update(client_receive="spin"), "client_receive: None → 'spin'"),
    ],
)
def test_what_a_cell_depends_on_changes_its_key(change: Any, named: str) -> None:
    before = data("old")
    after = data("old")
    change(after)
    old, new = frozen(before), frozen(after)
    assert cell_key(old, KEPT) != cell_key(new, KEPT)
    assert content_changes(old, new, KEPT) == [named]


def test_an_arm_that_does_not_run_the_cell_is_not_part_of_it() -> None:
    after = data("old")
    after["arms"][1]["engine_args"] = ["--x"]
    assert cell_key(frozen(data("old")), OTHER) == cell_key(frozen(after), OTHER)


def test_a_long_list_of_changes_is_cut_and_counted() -> None:
    changes = [f"cell.f{n}: 1 → 2" for n in range(6)]
    assert changes_sentence(changes).endswith("cell.f3: 1 → 2; and 2 more")


def test_a_campaign_cannot_succeed_itself() -> None:
    with pytest.raises(ValidationError, match="successor_of names the campaign itself"):
        Matrix.model_validate(data("old", successor_of="old"))
