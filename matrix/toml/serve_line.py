"""A ``vllm serve`` command line read as vLLM reads it, for ``faceoff init``: the model
(the first word after ``serve``, or ``--model``) becomes the arm's model argument and,
unless ``--served-model-name`` says otherwise, the name it serves under; ``--host``,
``--port`` and ``--served-model-name`` become the arm's own fields (faceoff passes them back
to the engine); the flags that say what the recipe is also fill the card's recipe table and
the identity check (``--max-model-len``, ``--tensor-parallel-size``, ``--quantization``,
``--kv-cache-dtype``, ``--speculative-config``, …) and stay on the command line, which runs
as written. What comes around it (variables, a ``docker run``) is
``matrix.toml.launch_line``'s. Pure.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matrix.engines import flag_value, runs_vllm
from matrix.secrets import secret_flag
from matrix.toml.launch_line import Launch, LaunchError, read_launch

BINDING_FLAGS = ("--host", "--port", "--served-model-name")
# Flags of a serve line that describe the recipe: flag (and short form) -> recipe field.
RECIPE_FLAGS: dict[tuple[str, ...], str] = {
    ("--max-model-len",): "max_model_len",
    ("--tensor-parallel-size", "-tp"): "tensor_parallel",
    ("--decode-context-parallel-size", "-dcp"): "decode_context_parallel",
    ("--kv-cache-dtype",): "kv_cache_dtype",
    ("--max-num-seqs",): "max_num_seqs",
    ("--max-num-batched-tokens",): "max_num_batched_tokens",
    ("--speculative-config",): "speculation",
    ("--quantization", "-q"): "weight_format",
}
INTEGER_FIELDS = frozenset(
    {"max_model_len", "tensor_parallel", "decode_context_parallel", "max_num_seqs",
     "max_num_batched_tokens"}
)  # fmt: skip


class StarterError(ValueError):
    """What a person gave cannot make an arm; the message names the flag."""


@dataclass(frozen=True)
class ServeLine:
    """A ``vllm serve`` command line, read."""

    launcher: list[str]  # up to and including ``serve`` (``vllm serve``)
    model: str
    args: list[str]  # every other word, binding flags taken out
    binding: dict[str, str]  # host, port, served_model as given
    recipe: dict[str, Any]
    launch: Launch  # what came around the engine's words: env, a container, notes

    @property
    def quantization(self) -> str | None:
        return self.recipe.get("weight_format")


def read_serve_line(text: str, where: str) -> ServeLine:
    try:
        launch = read_launch(shlex.split(text), where)
    except LaunchError as exc:
        raise StarterError(str(exc)) from exc
    words = launch.engine
    if not runs_vllm(words) or "serve" not in words:
        raise StarterError(
            f"{where}: {text!r} is not a `vllm serve MODEL …` command line (with NAME=VALUE "
            "variables or a `docker run … IMAGE` before it)"
        )
    secret = next((w for w in words if secret_flag(w)), None)
    if secret is not None:
        raise StarterError(
            f"{where}: {secret.split('=', 1)[0]} would put a secret in the matrix; drop it and "
            "give the engine's variable in [arms.secrets] (vLLM: VLLM_API_KEY, HF_TOKEN)"
        )
    start = words.index("serve") + 1
    launcher, rest = words[:start], words[start:]
    model = flag_value(rest, "--model")
    if rest and not rest[0].startswith("-"):
        model, rest = rest[0], rest[1:]
    if model is None:
        raise StarterError(f"{where}: no model: write `vllm serve MODEL …`")
    args = _without(rest, ("--model", *BINDING_FLAGS))
    binding = {f: v for f in BINDING_FLAGS if (v := flag_value(rest, f)) is not None}
    return ServeLine(launcher, model, args, binding, _recipe(args, model, where), launch)


def _without(words: list[str], flags: Sequence[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in flags:
            skip = True
        elif not word.startswith(tuple(f"{f}=" for f in flags)):
            kept.append(word)
    return kept


def _recipe(args: list[str], model: str, where: str) -> dict[str, Any]:
    recipe: dict[str, Any] = {"checkpoint": model}
    for flags, name in RECIPE_FLAGS.items():
        value = next((v for f in flags if (v := flag_value(args, f)) is not None), None)
        if value is None:
            continue
        if name in INTEGER_FIELDS:
            if not value.isdigit():
                raise StarterError(f"{where}: {flags[0]} {value!r} is not a whole number")
            recipe[name] = int(value)
        else:
            recipe[name] = _speculation(value) if name == "speculation" else value
    return recipe


def _speculation(value: str) -> str:
    """``{"method": "mtp", "num_speculative_tokens": 3}`` -> ``mtp, 3 tokens``."""
    try:
        config = json.loads(value)
    except ValueError:
        return value
    if not isinstance(config, dict):
        return value
    said = [str(config.get("method") or config.get("model") or "speculative")]
    if "num_speculative_tokens" in config:
        said.append(f"{config['num_speculative_tokens']} tokens")
    return ", ".join(said)
