"""vLLM's own flag list for the pinned version, and the engine flags of an arm read against it.

``matrix/flags/vllm-<version>.txt`` is every spelling ``vllm serve --help=all`` prints, made
by ``deploy/vllm/serve_flags.py`` from the real CLI (never written by hand). A flag vLLM
does not know makes the engine exit at start, after the take-over; one spelled close to a
known flag (``--max-model-length``) is a typo, and worse, a typo of ``--max-model-len``
switches every context check off. vLLM reads ``--a_b`` as ``--a-b`` and ``--json-arg.key``
as a key of ``--json-arg``, so both are known when their flag is. Pure, but for reading the
list, which is package data.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath

from matrix.engines import VLLM_MODULES, dashed

VLLM_VERSION = "0.32.0"  # the engine faceoff's lanes and rehearsal pin (deploy/vllm/install.sh)
MAX_SHOWN = 3  # known flags an ambiguous prefix names in its message
CLOSE = 0.8  # difflib's ratio above which an unknown flag is taken for a typo of a known one


@dataclass(frozen=True)
class UnknownFlag:
    flag: str  # as written, without its =value
    near: str | None  # the known flag(s) it is likely a typo or an ambiguous prefix of


@functools.cache
def vllm_flags(version: str = VLLM_VERSION) -> frozenset[str]:
    """Every flag spelling of ``vllm serve`` at ``version``."""
    text = resources.files("matrix").joinpath("flags", f"vllm-{version}.txt").read_text()
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def unknown_flags(argv: Sequence[str], known: frozenset[str]) -> list[UnknownFlag]:
    """The flags of a vLLM command line (after ``serve`` or the server module, else all of
    ``argv``: a container's command) that ``known`` lacks, each with its near known flag."""
    found = []
    for word in _flag_words(_after_entrypoint(argv)):
        name = _canonical(word)
        if name in known:
            continue
        extended = sorted(f for f in known if name.startswith("--") and f.startswith(name))
        if len(extended) == 1:
            continue  # argparse reads a unique prefix as its flag (vLLM allows abbreviations)
        near = extended or difflib.get_close_matches(name, known, n=1, cutoff=CLOSE)
        shown = [*near[:MAX_SHOWN], *(["…"] if len(near) > MAX_SHOWN else [])]
        found.append(UnknownFlag(word, " or ".join(shown) if near else None))
    return found


def _after_entrypoint(argv: Sequence[str]) -> Sequence[str]:
    words = [PurePosixPath(w).name for w in argv]
    for index, word in enumerate(words):
        if word == "serve" or word in VLLM_MODULES:
            return argv[index + 1 :]
    return argv


def _flag_words(argv: Sequence[str]) -> Iterator[str]:
    for word in argv:
        name = word.split("=", 1)[0]
        if name.startswith("--") or (name.startswith("-") and name[1:2].isalpha()):
            yield name


def _canonical(flag: str) -> str:
    """``--a_b.key`` as vLLM reads it: ``--a-b``."""
    return dashed(flag.split(".", 1)[0])
