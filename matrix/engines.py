"""Engines faceoff knows how to bind: the flags that make one listen where its arm says.

A vLLM server takes ``--host``, ``--port`` and ``--served-model-name``; left out,
it listens on port 8000 under the model path's name, which is not where the arm's
probes, client and collectors look. For an arm that runs vLLM, faceoff appends the
flags the command line lacks and refuses one whose command line says otherwise.
Pure functions over argv lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

VLLM = "vllm"
# Addresses that listen on every interface, so on the arm's host too.
WILDCARD_HOSTS = ("0.0.0.0", "::")
VLLM_MODULES = ("vllm.entrypoints.openai.api_server",)


@dataclass(frozen=True)
class Binding:
    """Where an arm's engine must listen, and the model id it must report."""

    host: str
    port: int
    served_model: str

    def flags(self) -> tuple[tuple[str, str], ...]:
        return (
            ("--host", self.host),
            ("--port", str(self.port)),
            ("--served-model-name", self.served_model),
        )


def runs_vllm(command: Sequence[str]) -> bool:
    """``vllm serve``, ``python -m vllm.entrypoints.cli.main serve`` or the API server module."""
    words = [PurePosixPath(word).name for word in command]
    if any(word in VLLM_MODULES for word in words):
        return True
    if "serve" not in words:
        return False
    return any(VLLM in word for word in words[: words.index("serve")])


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value given to ``flag`` (``--flag V`` or ``--flag=V``; vLLM reads ``--a_b`` as
    ``--a-b``), last one wins; None if absent."""
    value = None
    for index, word in enumerate(argv):
        name, equals, given = word.partition("=")
        if dashed(name) != flag:
            continue
        if equals:
            value = given
        elif index + 1 < len(argv):
            value = argv[index + 1]
    return value


def dashed(word: str) -> str:
    """A long flag as vLLM's parser reads it: underscores are dashes (``--max_model_len``)."""
    return word.replace("_", "-") if word.startswith("--") else word


def binding_conflicts(argv: Sequence[str], binding: Binding) -> list[str]:
    """A sentence for each binding flag that ``argv`` sets to something else."""
    conflicts = []
    for flag, wanted in binding.flags():
        given = flag_value(argv, flag)
        if given is None or given == wanted:
            continue
        if flag == "--host" and given in WILDCARD_HOSTS:
            continue
        conflicts.append(f"{flag} {given} (the arm says {wanted})")
    return conflicts


def missing_binding(argv: Sequence[str], binding: Binding) -> list[str]:
    """The binding flags ``argv`` lacks, with their values, in a fixed order."""
    added: list[str] = []
    for flag, wanted in binding.flags():
        if flag_value(argv, flag) is None:
            added += [flag, wanted]
    return added


# vLLM's context flag, and its spellings of "fit the context to memory" (no fixed limit).
MAX_MODEL_LEN_FLAG = "--max-model-len"
AUTO_LENGTHS = ("auto", "-1")
# vLLM's human-readable integers: lower case decimal, upper case binary multipliers.
MULTIPLIERS = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
PARALLEL_FLAGS = (
    ("--tensor-parallel-size", "-tp"),
    ("--pipeline-parallel-size", "-pp"),
    ("--data-parallel-size", "-dp"),
)


def max_model_len_flag(argv: Sequence[str]) -> int | None:
    """The context ``--max-model-len`` gives (``8192``, ``32k``, ``128K``), None when absent
    or ``auto``; ValueError for a value vLLM would refuse too."""
    given = flag_value(argv, MAX_MODEL_LEN_FLAG)
    if given is None or given.strip().lower() in AUTO_LENGTHS:
        return None
    return human_int(given.strip(), MAX_MODEL_LEN_FLAG)


def human_int(text: str, flag: str) -> int:
    """``8192``, ``32k`` (32,000) or ``32K`` (32,768), as vLLM reads them."""
    number, unit = (text[:-1], MULTIPLIERS[text[-1]]) if text[-1:] in MULTIPLIERS else (text, 1)
    try:
        value = round(float(number) * unit)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{flag} {text!r} is not a token count (e.g. 8192, 32k or 32K)")
    return value


def gpus_asked(argv: Sequence[str]) -> int:
    """GPUs the engine flags ask for: tensor × pipeline × data parallel sizes (1 when unset)."""
    total = 1
    for flags in PARALLEL_FLAGS:
        given = next((v for f in flags if (v := flag_value(argv, f)) is not None), None)
        total *= int(given) if given is not None and given.isdigit() else 1
    return total


def model_argument(argv: Sequence[str], *, entrypoint_serves: bool = False) -> str | None:
    """The model a vLLM command serves: the word after ``serve``, else ``--model``; with
    ``entrypoint_serves`` (an image whose entrypoint is ``vllm serve``), a first word that
    is no flag."""
    words = list(argv)
    if "serve" in words:
        after = words[words.index("serve") + 1 :]
        if after and not after[0].startswith("-"):
            return after[0]
    given = flag_value(words, "--model")
    if given is None and entrypoint_serves and words and not words[0].startswith("-"):
        return words[0]
    return given
