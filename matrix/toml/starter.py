"""A starting matrix, written as commented TOML from what a person knows: each arm's image
and/or its ``vllm serve …`` command line, and the GPUs. Pure; ``faceoff init`` asks, writes
and validates.

A serve line is read as vLLM reads it: the model (the first word after ``serve``, or
``--model``) becomes the arm's model argument and, unless ``--served-model-name`` says
otherwise, the name it serves under; ``--host``, ``--port`` and ``--served-model-name``
become the arm's own fields (faceoff passes them back to the engine); the flags that say
what the recipe is also fill the card's recipe table and the identity check
(``--max-model-len``, ``--tensor-parallel-size``, ``--quantization``, ``--kv-cache-dtype``,
``--speculative-config``, …) and stay on the command line, which runs as written.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.engines import flag_value, runs_vllm
from matrix.secrets import secret_flag
from matrix.toml.text import toml_value

DEFAULT_PORTS = (8000, 8001)
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
OUTPUT_TOKENS = 1024  # max_tokens of the starting cells
INPUTS = (2048, 8192, 32768)  # the starting cells' input lengths, those that fit the context


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

    @property
    def quantization(self) -> str | None:
        return self.recipe.get("weight_format")


def read_serve_line(text: str, where: str) -> ServeLine:
    words = shlex.split(text)
    if not runs_vllm(words) or "serve" not in words:
        raise StarterError(f"{where}: {text!r} is not a `vllm serve MODEL …` command line")
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
    return ServeLine(launcher, model, args, binding, _recipe(args, model, where))


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


@dataclass(frozen=True)
class ArmAnswers:
    """What a person said of one arm."""

    name: str
    role: str
    image: str | None = None
    serve: str | None = None
    model: str | None = None  # when there is no serve line


@dataclass(frozen=True)
class Answers:
    campaign: str
    seed: int
    arms: tuple[ArmAnswers, ArmAnswers]
    gpus: list[int] = field(default_factory=list)


def starting_matrix(answers: Answers, schema_path: str | None = None) -> str:
    """The commented TOML of a starting matrix."""
    serves = [_serve_of(arm) for arm in answers.arms]
    ports = _ports(serves)
    _gpus_suffice(answers, serves)
    parts = [
        *([f"#:schema {schema_path}", ""] if schema_path else []),
        HEADER,
        "schema_version = 1",
        "",
        "[campaign]",
        f"name = {toml_value(answers.campaign)}",
        f"seed = {answers.seed}  # prompts, sampling and intervals derive from it",
        'stop_policy = "block_workload"  # a failed cell blocks the later cells of its kind',
        "",
    ]
    for arm, serve, port in zip(answers.arms, serves, ports, strict=True):
        parts += _arm(arm, serve, port, answers.gpus)
    parts += _cells(serves)
    parts.append(RULE)
    return "\n".join(parts)


HEADER = """\
# A starting matrix written by `faceoff init`: the incumbent (what serves today) and one
# candidate, run one after the other on the same GPUs, with matched cells. Every field:
# docs/reference/matrix-fields.md; how they work together: docs/matrix.md.
# Check it with `faceoff validate FILE` (the plan, where each arm listens, the worst case).
"""

RULE = """\
# The decision rule, declared before anything is measured (docs/matrix.md "The decision
# rule"): uncomment and adjust. The card then opens with promote, do not promote or no
# decision.
# [rule]
# [[rule.criteria]]              # TTFT p95 no worse than 10 %
# metric = "ttft_s"
# statistic = "p95"
# non_inferiority = 0.10
# [[rule.criteria]]              # aggregate output throughput at least 10 % better
# metric = "output_tps"
# superiority = 0.10
"""


def _serve_of(arm: ArmAnswers) -> ServeLine | None:
    if arm.serve:
        return read_serve_line(arm.serve, f"--{arm.role}-serve")
    if arm.image is None:
        raise StarterError(
            f"--{arm.role}-image or --{arm.role}-serve: the {arm.role} needs an image or a "
            "`vllm serve` command line"
        )
    if arm.model is None:
        raise StarterError(
            f"--model: the {arm.role}'s image has no serve line to name its model; give "
            "--model PATH (as the image's `vllm serve` takes it) or --{arm.role}-serve"
        )
    return None


def _ports(serves: list[ServeLine | None]) -> list[int]:
    given = [int(s.binding["--port"]) if s and "--port" in s.binding else None for s in serves]
    free = [p for p in DEFAULT_PORTS if p not in given] + [p + 2 for p in DEFAULT_PORTS]
    return [port if port is not None else free.pop(0) for port in given]


def _gpus_suffice(answers: Answers, serves: list[ServeLine | None]) -> None:
    for arm, serve in zip(answers.arms, serves, strict=True):
        parallel = serve.recipe.get("tensor_parallel", 1) if serve else 1
        if answers.gpus and parallel > len(answers.gpus):
            raise StarterError(
                f"--gpus: {len(answers.gpus)} GPU(s) given, but the {arm.role}'s serve line "
                f"asks --tensor-parallel-size {parallel}; give that many GPUs"
            )


def _arm(arm: ArmAnswers, serve: ServeLine | None, port: int, gpus: list[int]) -> list[str]:
    model = serve.model if serve else arm.model
    lines = [
        "[[arms]]",
        f"name = {toml_value(arm.name)}",
        f'role = "{arm.role}"',
    ]
    if arm.image:
        lines += [
            'lane = "docker"',
            f"image = {toml_value(arm.image)}  # pinned by digest: repo@sha256:<64 hex>",
            'engine = "vllm"  # the image runs `vllm serve`: faceoff adds --host, --port, '
            "--served-model-name",
            f"command = {toml_value([model])}  # the model argument, as mounted below",
        ]
    else:
        assert serve is not None  # an arm without an image has a serve line
        lines += [
            'lane = "process"',
            f"command = {toml_value([*serve.launcher, serve.model])}",
        ]
    if serve and serve.args:
        lines.append(f"engine_args = {toml_value(serve.args)}")
    host = serve.binding.get("--host") if serve else None
    if host:
        lines.append(f"host = {toml_value(host)}")
    served = serve.binding.get("--served-model-name", model) if serve else model
    lines += [
        f"port = {port}",
        f"gpu_ids = {toml_value(gpus)}  # the arms run one after the other: the same GPUs",
        f"served_model = {toml_value(served)}  # the id /v1/models must report",
    ]
    if serve and serve.quantization:
        lines.append(
            f"expected_quantization = {toml_value(serve.quantization)}  # checked in the boot log"
        )
    lines += [
        "startup_deadline_s = 1800  # loading weights and compiling take a while",
        "warmups = 2",
    ]
    if arm.image and model and model.startswith("/"):
        lines += [
            "[[arms.mounts]]  # the host folder with the weights: change source if it lives "
            "elsewhere",
            f"source = {toml_value(model)}",
            f"target = {toml_value(model)}",
        ]
    if serve:
        lines.append("[arms.recipe]  # what the card's recipe table shows")
        lines += [f"{key} = {toml_value(value)}" for key, value in serve.recipe.items()]
    return [*lines, ""]


def _cells(serves: list[ServeLine | None]) -> list[str]:
    limits = [s.recipe["max_model_len"] for s in serves if s and "max_model_len" in s.recipe]
    context: int = min(limits, default=INPUTS[-1] + OUTPUT_TOKENS)
    inputs = [n for n in INPUTS if n + OUTPUT_TOKENS <= context]
    output = OUTPUT_TOKENS
    if not inputs:  # a small context: half of it in, a quarter out
        inputs, output = [max(1, context // 2)], max(1, context // 4)
    return [
        "[defaults]",
        "deadline_s = 1200",
        f"sampling = {{ max_tokens = {output} }}",
        "",
        "[[cells]]  # natural prompts; each list expands to every combination",
        'kind = "natural"',
        f"input_tokens = {toml_value(inputs)}",
        "concurrency = [1, 2]",
        "requests = 8",
        "",
    ]
