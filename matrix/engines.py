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
    """The value given to ``flag`` (``--flag V`` or ``--flag=V``), last one wins; None if absent."""
    value = None
    for index, word in enumerate(argv):
        if word == flag and index + 1 < len(argv):
            value = argv[index + 1]
        elif word.startswith(f"{flag}="):
            value = word.split("=", 1)[1]
    return value


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
