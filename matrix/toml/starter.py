"""A starting matrix, written as commented TOML from what a person knows: each arm's image
and/or its ``vllm serve …`` command line (``matrix.toml.serve_line``; variables or a
``docker run`` around it, ``matrix.toml.launch_line``), and the GPUs. The arms share one
served model id; whatever is read otherwise than written or left out (a secret, a docker
option faceoff does itself, cells a smaller context cannot take, no GPUs) is said in a
note, written as a comment too. Pure; ``faceoff init`` asks, writes and validates.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from matrix.toml.inline import toml_value
from matrix.toml.serve_line import ServeLine, StarterError, read_serve_line

DEFAULT_PORTS = (8000, 8001)
COMMENT_WIDTH = 92
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
OUTPUT_TOKENS = 1024  # max_tokens of the starting cells
INPUTS = (2048, 8192, 32768)  # the starting cells' input lengths, those that fit the context


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


@dataclass(frozen=True)
class Starter:
    """What the answers make, read once: each arm's serve line, port, GPUs and model id, the
    cells, and the notes of what was read otherwise or left out."""

    serves: list[ServeLine | None]
    ports: list[int]
    gpus: list[list[int]]
    served: list[str | None]
    cells: list[str]
    notes: list[str]


def starting_matrix(answers: Answers, schema_path: str | None = None) -> str:
    """The commented TOML of a starting matrix."""
    start = read_answers(answers)
    notes = [line for note in start.notes for line in _comment(note, "# - ", "#   ")]
    parts = [
        *([f"#:schema {schema_path}", ""] if schema_path else []),
        HEADER,
        *(["# What `faceoff init` read otherwise than written, or left out:", *notes, ""]
          if notes else []),
        "schema_version = 1",
        "",
        "[campaign]",
        f"name = {toml_value(answers.campaign)}",
        f"seed = {answers.seed}  # prompts, sampling and intervals derive from it",
        'stop_policy = "block_workload"  # a failed cell blocks the later cells of its kind',
        "",
    ]  # fmt: skip
    for index, arm in enumerate(answers.arms):
        parts += _arm(arm, start, index)
    parts += start.cells
    parts.append(RULE)
    return "\n".join(parts)


def read_answers(answers: Answers) -> Starter:
    serves = [_serve_of(arm) for arm in answers.arms]
    notes = [n for s in serves if s for n in s.launch.notes]
    gpus = [_gpus_of(answers, serves)] * len(serves)
    notes += _gpus_suffice(answers, serves, gpus)
    cells, dropped = _cells(answers, serves)
    return Starter(serves, _ports(serves), gpus, _served_ids(serves), cells, notes + dropped)


def _gpus_of(answers: Answers, serves: list[ServeLine | None]) -> list[int]:
    """``--gpus``, else the first docker run line's ``--gpus "device=…"``, else the first
    serve line's ``CUDA_VISIBLE_DEVICES``: both arms use them, one after the other."""
    containers = [s.launch.container for s in serves if s and s.launch.container]
    visible = [
        s.launch.env.get(VISIBLE_DEVICES, "") for s in serves if s and not s.launch.container
    ]
    said = [c.gpus for c in containers if c.gpus] + [_indices(v) for v in visible if _indices(v)]
    return answers.gpus or next(iter(said), [])


def _indices(text: str) -> list[int]:
    words = [w.strip() for w in text.split(",")]
    return [int(w) for w in words] if words and all(w.isdigit() for w in words) else []


def _served_ids(serves: list[ServeLine | None]) -> list[str | None]:
    """The id each arm reports: its own --served-model-name, else the incumbent's, so a
    router (and the comparison) asks both arms for one model."""
    own = [s.binding.get("--served-model-name") if s else None for s in serves]
    first = own[0] or (serves[0].model if serves[0] else None)
    return [name or first for name in own]


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


def _gpus_suffice(
    answers: Answers, serves: list[ServeLine | None], gpus: list[list[int]]
) -> list[str]:
    """Each arm's GPUs cover its tensor-parallel size; none given at all is said."""
    for arm, serve, ids in zip(answers.arms, serves, gpus, strict=True):
        parallel = serve.recipe.get("tensor_parallel", 1) if serve else 1
        if parallel > 1 and parallel > len(ids):
            given = f"{len(ids)} GPU(s) given" if ids else "no --gpus given"
            raise StarterError(
                f"--gpus: {given}, but the {arm.role}'s serve line asks "
                f"--tensor-parallel-size {parallel}; give that many, e.g. --gpus "
                f"{','.join(map(str, range(parallel)))}"
            )
    if any(gpus):
        return []
    return [
        "no --gpus: gpu_ids = [] on both arms, so no GPU is sampled and `faceoff validate` "
        "refuses the matrix while gpu_memory is required; give gpu_ids (or, on a host "
        'without GPUs, [families.not_applicable] gpu_memory = "…")'
    ]


def _arm(arm: ArmAnswers, start: Starter, index: int) -> list[str]:
    serve = start.serves[index]
    model = serve.model if serve else arm.model
    image = _image_of(arm, serve)
    lines = ["[[arms]]", f"name = {toml_value(arm.name)}", f'role = "{arm.role}"']
    if image:
        lines += [
            'lane = "docker"',
            f"image = {toml_value(image)}  # pinned by digest: repo@sha256:<64 hex>",
            'engine = "vllm"  # the image runs `vllm serve`: faceoff adds --host, --port, '
            "--served-model-name",
            f"command = {toml_value([model])}  # the model argument, as mounted below",
        ]
    else:
        assert serve is not None  # an arm without an image has a serve line
        lines += ['lane = "process"', f"command = {toml_value([*serve.launcher, serve.model])}"]
    if serve and serve.args:
        lines.append(f"engine_args = {toml_value(serve.args)}")
    lines += _launch_fields(serve)
    host = serve.binding.get("--host") if serve else None
    if host:
        lines.append(f"host = {toml_value(host)}")
    lines += [
        f"port = {start.ports[index]}",
        f"gpu_ids = {toml_value(start.gpus[index])}  # the arms run one after the other: the "
        "same GPUs",
        f"served_model = {toml_value(start.served[index] or model)}  # the id /v1/models must "
        "report, one for both arms (the router asks for it)",
    ]
    if serve and serve.quantization:
        lines.append(
            f"expected_quantization = {toml_value(serve.quantization)}  # checked in the boot log"
        )
    lines += [
        "startup_deadline_s = 1800  # loading weights and compiling take a while",
        "warmups = 2",
    ]
    if image:
        lines += _mounts(serve, model)
    if serve:
        lines.append("[arms.recipe]  # what the card's recipe table shows")
        lines += [f"{key} = {toml_value(value)}" for key, value in serve.recipe.items()]
    return [*lines, ""]


def _image_of(arm: ArmAnswers, serve: ServeLine | None) -> str | None:
    container = serve.launch.container if serve else None
    if container is None:
        return arm.image
    if arm.image and arm.image != container.image:
        raise StarterError(
            f"--{arm.role}-image {arm.image} and the image of its docker run line, "
            f"{container.image}, differ; give one of them"
        )
    return container.image


def _launch_fields(serve: ServeLine | None) -> list[str]:
    """What came around the engine's words: its variables and its container's sizes."""
    if serve is None:
        return []
    launch, lines = serve.launch, []
    if launch.env:
        lines.append(f"env = {toml_value(launch.env)}  # as the command line set them")
    if launch.secrets:
        lines.append(
            f"secrets = {toml_value(launch.secrets)}  # lane variable = the operator's "
            "variable that holds it"
        )
    container = launch.container
    if container and container.shm_size:
        lines.append(f"shm_size = {toml_value(container.shm_size)}")
    if container and container.memory:
        lines.append(f"memory_limit = {toml_value(container.memory)}")
    return lines


def _mounts(serve: ServeLine | None, model: str | None) -> list[str]:
    container = serve.launch.container if serve else None
    if container and container.mounts:
        return [
            line
            for source, target, read_only in container.mounts
            for line in (
                "[[arms.mounts]]  # as the docker run line mounted it",
                f"source = {toml_value(source)}",
                f"target = {toml_value(target)}",
                *([] if read_only else ["read_only = false"]),
            )
        ]
    if not (model and model.startswith("/")):
        return []
    return [
        "[[arms.mounts]]  # the host folder with the weights: change source if it lives elsewhere",
        f"source = {toml_value(model)}",
        f"target = {toml_value(model)}",
    ]


def _cells(answers: Answers, serves: list[ServeLine | None]) -> tuple[list[str], list[str]]:
    """The starting cells, those that fit every arm's context, and a note of those that do
    not (a cell runs on every arm: a pair needs both)."""
    limits = [
        (s.recipe["max_model_len"], arm.name)
        for arm, s in zip(answers.arms, serves, strict=True)
        if s and "max_model_len" in s.recipe
    ]
    context, smallest = min(limits, default=(INPUTS[-1] + OUTPUT_TOKENS, ""))
    inputs = [n for n in INPUTS if n + OUTPUT_TOKENS <= context]
    dropped = [n for n in INPUTS if n not in inputs]
    output = OUTPUT_TOKENS
    if not inputs:  # a small context: half of it in, a quarter out
        inputs, output = [max(1, context // 2)], max(1, context // 4)
    said = (
        [
            f"input_tokens {toml_value(dropped)} left out of the cells: with max_tokens = "
            f"{OUTPUT_TOKENS} they exceed arm {smallest!r}'s --max-model-len {context}, the "
            "smallest context (a cell runs on both arms)"
        ]
        if dropped
        else []
    )
    lines = [
        "[defaults]",
        "deadline_s = 1200",
        f"sampling = {{ max_tokens = {output} }}",
        "",
        "[[cells]]  # natural prompts; each list expands to every combination",
        'kind = "natural"',
        *[line for note in said for line in _comment(note, "# ", "# ")],
        f"input_tokens = {toml_value(inputs)}",
        "concurrency = [1, 2]",
        "requests = 8",
        "",
    ]
    return lines, said


def _comment(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, COMMENT_WIDTH, initial_indent=first, subsequent_indent=rest)
