"""A matched reasoning-effort A/B on the real engine: one recipe, the effort a declared variant.

The tiny model's own chat template (ChatML, ``deploy/vllm/build_tiny_llama.py``) has no
``reasoning_effort`` variable, and vLLM leaves out template kwargs a template does not
declare: two engines of the same recipe, one sent effort ``low`` and the other ``max``,
prefill equal prompt-token vectors, and pair integrity passes saying so, with the effort
listed as differing by design. Served with a template that renders the effort, the same
two plans differ in every vector: pair integrity says the messages were the same and the
declared variant rendered them differently; undeclared, it names the mismatch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.attempt.request_plan import RequestPlan
from faceoff.formats.attempt.verdict import Outcome, Verdict
from faceoff.formats.frozen_matrix import freeze
from flows.campaign.planning import PlanTarget, plan_cell
from flows.prefect.flow_runner import run_campaign
from guards.judge import judge_pair
from guards.pair import pair_integrity
from matrix.toml.reader import load_matrix
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.vllm.engine import NOT_APPLICABLE, SERVED, cell, serving, vllm_arm
from workload.request import Body

pytestmark = [pytest.mark.vllm]

CELL = "natural-512-c1"
EFFORTS = {"inc": "low", "cand": "max"}
BY_DESIGN = "reasoning_effort: 'low' vs 'max'"
# The model's template with a system turn naming the effort, when one is sent.
EFFORT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if reasoning_effort is defined and reasoning_effort %}"
    "{{ '<|im_start|>system\\nReasoning effort: ' + reasoning_effort + '<|im_end|>\\n' }}"
    "{% endif %}"
    "{% for m in messages %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def effort_matrix(folder: Path, model: Path) -> Path:
    """Two arms of one recipe (same engine, same flags); the cell's effort varies by arm."""
    data: dict[str, Any] = {
        "schema_version": 1,
        "campaign": {"name": "vllm-effort", "seed": 13, "stop_policy": "continue"},
        "arms": [
            vllm_arm("inc", "incumbent", model, "--max-num-seqs", "8"),
            vllm_arm("cand", "candidate", model, "--max-num-seqs", "8"),
        ],
        "cells": [cell(CELL, concurrency=1, variants={"reasoning_effort": EFFORTS})],
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST,  # what is under test is the pair, not the shared host
    }
    return write_matrix(folder, data)


@pytest.mark.prefect
def test_an_effort_ab_on_two_real_engines_of_one_recipe_runs_as_a_matched_pair(
    prefect_harness: None, tiny_model: Path, workdir: Path, tmp_path: Path
) -> None:
    template = json.loads((tiny_model / "tokenizer_config.json").read_text())["chat_template"]
    assert "reasoning_effort" not in template  # the model's template has no use for it

    result = run_campaign(effort_matrix(tmp_path, tiny_model), workdir)

    folders = {arm: result.bundle / f"cells/{CELL}/{arm}/attempt-1" for arm in EFFORTS}
    said = [Verdict.read(f / "verdict.json").sentence for f in folders.values()]
    assert result.complete and result.restored, said
    plans = {arm: RequestPlan.read(folder / "requests.json") for arm, folder in folders.items()}
    for arm, effort in EFFORTS.items():
        for request in plans[arm].requests:  # each engine was sent its own arm's effort
            body = json.loads(Body.of(request).wire(SERVED))
            assert body["chat_template_kwargs"] == {"reasoning_effort": effort}
    inc, cand = plans["inc"].requests, plans["cand"].requests
    assert [r.messages for r in inc] == [r.messages for r in cand]
    # The template ignored the effort: both engines prefilled the same tokens.
    assert [r.prompt_sha256 for r in inc] == [r.prompt_sha256 for r in cand]

    pair = judge_pair(folders["inc"], folders["cand"])
    assert pair.outcome is Outcome.PASSED, pair.detail
    assert pair.evidence["vector_mismatches"] == 0
    assert pair.evidence["by_design"] == [BY_DESIGN]
    assert "with equal prompt-token vectors" in pair.detail
    assert pair.detail.endswith(f"by design: {BY_DESIGN}")
    comparison = json.loads((result.bundle / "comparison.json").read_text())
    (entry,) = [c for c in comparison["cells"] if c["id"] == CELL]
    assert entry["variants"] == {"reasoning_effort": EFFORTS}
    (matched,) = entry["pairs"]
    assert matched["comparable"], matched["sentence"]
    assert matched["sentence"] == f"comparable: {pair.detail}"
    assert audit_bundle(result.bundle).ok


@pytest.mark.engine_untimed  # plans through /tokenize: nothing here depends on a quiet host
def test_an_effort_the_template_renders_is_a_pair_of_the_same_messages_rendered_apart(
    tiny_model: Path, tmp_path: Path
) -> None:
    frozen = freeze(load_matrix(effort_matrix(tmp_path, tiny_model)))
    (target,) = frozen.matrix.cells
    template = tmp_path / "effort.jinja"
    template.write_text(EFFORT_TEMPLATE)
    log = tmp_path / "engine.log"
    with serving(tiny_model, log, "--chat-template", str(template)) as engine:
        plans: dict[str, RequestPlan] = {}
        for arm in ("inc", "cand"):  # the candidate retokenizes the incumbent's texts
            lane = PlanTarget(frozen.matrix.arm(arm), engine.url, 13, "vllm-effort")
            plans[arm] = plan_cell(target, lane, reference=plans.get("inc"))

    inc, cand = plans["inc"].requests, plans["cand"].requests
    assert [r.messages for r in inc] == [r.messages for r in cand]
    assert all(a.prompt_sha256 != b.prompt_sha256 for a, b in zip(inc, cand, strict=True))

    pair = pair_integrity(plans["inc"], plans["cand"])
    assert pair.outcome is Outcome.PASSED, pair.detail
    assert (
        f"with the same messages ({len(inc)} vector(s) rendered differently by the declared "
        "variant)" in pair.detail
    )
    assert pair.detail.endswith(f"by design: {BY_DESIGN}")

    undeclared = target.model_copy(update={"variants": {}})
    refused = pair_integrity(*(p.model_copy(update={"cell": undeclared}) for p in plans.values()))
    assert refused.outcome is Outcome.FAILED
    assert f"sampling differs undeclared: {BY_DESIGN} (first 0)" in refused.detail
    assert f"prompt-token vectors differ for {len(inc)} request(s)" in refused.detail
