"""The card's recipe diff of the glm53-shaped campaign: only what the two arms set apart."""

from __future__ import annotations

from evidence.bundle.write import BundleIndex
from evidence.views.card.recipe_diff import recipe_diffs


def test_the_card_lists_what_the_pair_of_arms_changes(built: BundleIndex) -> None:
    text = (built.root / "RESULT.md").read_text(encoding="utf-8")
    section = text.split("## What each pair of arms changes", 1)[1].split("\n## ", 1)[0]
    assert "exl3-r11 versus nvfp4-r2:" in section
    assert "| recipe.speculation | none | MTP3 |" in section
    assert "| recipe.max_num_batched_tokens | 2048 | 4096 |" in section
    assert "| env VLLM_GLM53_EMBED_HOST | — | 1 |" in section
    assert "recipe.max_model_len" not in section  # equal on both arms: not a row


def test_a_declared_sampling_variant_is_a_row_of_the_diff(built: BundleIndex) -> None:
    comparison = built.comparison
    first = comparison.cells[0]
    varied = first.model_copy(
        update={"variants": {"reasoning_effort": {"exl3-r11": "high", "nvfp4-r2": "max"}}}
    )
    shown = recipe_diffs(comparison.model_copy(update={"cells": [varied]}))
    assert f"| {first.id} sampling.reasoning_effort | high | max |" in shown
