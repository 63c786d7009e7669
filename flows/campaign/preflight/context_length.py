"""Context: the model's ``config.json`` limit covers the context the arm asks of the engine
(``--max-model-len`` or ``recipe.max_model_len``) and every cell's input plus max_tokens.

The limit is read as vLLM derives it: the smallest of the length keys of the text
config, scaled by a RoPE factor where the scaling extends the context.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faceoff.errors import FaceoffError
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import arm_subject, fail, ok, warn
from flows.campaign.preflight.files import model_directory, mount_missing
from lanes.weights_manifest import host_path
from matrix.arm import Arm
from matrix.cell import Cell

CONFIG = "config.json"
# vLLM's keys for the model's context (vllm/config: _get_and_verify_max_len), smallest wins.
LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose length keys already give the extended context.
UNSCALED_ROPE = frozenset({"su", "longrope", "llama3", "mrope", "default"})
LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"  # vLLM's switch to start beyond the model's limit


@dataclass(frozen=True)
class ModelLimit:
    tokens: int
    source: str  # e.g. "config.json max_position_embeddings = 8192"


def context_checks(arms: list[Arm], cells_of: Mapping[str, list[Cell]]) -> list[CheckResult]:
    found = []
    for arm in arms:
        if arm.simulator is not None:
            found.append(ok("context", arm_subject(arm.name), "a simulator: the pilot asks it"))
            continue
        found.append(_arm_context(arm, cells_of[arm.name]))
    return found


def _arm_context(arm: Arm, cells: list[Cell]) -> CheckResult:
    directory = model_directory(arm) or _manifest_directory(arm)
    subject = arm_subject(arm.name)
    if directory is not None and mount_missing(arm, directory):
        return ok("context", subject, "not checked: its mount source is missing (see mounts)")
    if directory is None or not (directory / CONFIG).is_file():
        where = f"{directory}/{CONFIG}" if directory else "no model directory on this host"
        return warn(
            "context",
            subject,
            f"the model's limit cannot be read ({where})",
            "give weights_manifest (the checkpoint directory), or rely on the pilot",
        )
    try:
        limit = config_limit(json.loads((directory / CONFIG).read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        return warn("context", subject, f"{directory / CONFIG}: {exc}", "check the file")
    if limit is None:
        return warn(
            "context",
            subject,
            f"{directory / CONFIG} names no context length",
            "set --max-model-len, and rely on the pilot",
        )
    return judge_context(arm, cells, limit)


def judge_context(arm: Arm, cells: list[Cell], limit: ModelLimit) -> CheckResult:
    """Pure: the arm's context and its cells against the model's limit."""
    subject = arm_subject(arm.name)
    asked = arm.max_model_len
    if asked is not None and asked > limit.tokens:
        lenient = arm.env.get(LONG_ENV) == "1"
        said = f"{arm.max_model_len_words} exceeds the model's limit ({limit.source})" + (
            "; the arm sets VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
            if lenient
            else "; vLLM refuses to start with it"
        )
        make = warn if lenient else fail
        return make("context", subject, said, f"lower it to {limit.tokens} or less")
    context = asked or limit.tokens
    over = [c for c in cells if c.context_tokens > context]
    if over:
        said = ", ".join(f"{c.id} ({c.context_tokens:,})" for c in over)
        whence = arm.max_model_len_words if asked else limit.source
        return fail(
            "context",
            subject,
            f"cells need more context (input plus max_tokens) than the engine serves "
            f"({whence}): {said}; every request of them would be refused",
            "lower those cells' input_tokens or max_tokens, or leave the arm out of them",
        )
    largest = max((c.context_tokens for c in cells), default=0)
    return ok(
        "context",
        subject,
        f"{limit.source} covers the context {context:,} and every cell (largest {largest:,})",
    )


def config_limit(config: Mapping[str, Any]) -> ModelLimit | None:
    """The model's context as vLLM derives it from ``config.json``; None when it names none."""
    text = config.get("text_config") or config
    lengths = [(text[k], k) for k in LENGTH_KEYS if isinstance(text.get(k), int) and text[k] > 0]
    if not lengths:
        return None
    tokens, key = min(lengths)
    source = f"{CONFIG} {key} = {tokens:,}"
    rope = text.get("rope_scaling") or {}
    kind = rope.get("rope_type", rope.get("type"))
    factor = rope.get("factor")
    if isinstance(factor, int | float) and kind not in UNSCALED_ROPE:
        base = rope.get("original_max_position_embeddings", tokens) if kind == "yarn" else tokens
        tokens = int(base * factor)
        source += f" × rope_scaling {kind} factor {factor:g} = {tokens:,}"
    return ModelLimit(tokens, source)


def _manifest_directory(arm: Arm) -> Path | None:
    if arm.weights_manifest is None:
        return None
    try:
        return host_path(arm, arm.weights_manifest)
    except FaceoffError:
        return None
