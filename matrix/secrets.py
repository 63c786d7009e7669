"""What in an arm's recipe looks like a secret: a flag that takes one, a value shaped like a
key or a bearer token, an env knob named like one.

Whatever the matrix holds is frozen into the bundle, the lane record and the card, so a
secret must come from the operator's environment through ``[arms.secrets]``. Shell
strings (``sh -c "vllm serve … --api-key …"``) are read word by word like any command.
Env names are judged by their words: ``HF_TOKEN`` and ``OPENAI_KEY`` are secrets,
``LONG_PREFILL_TOKEN_THRESHOLD`` and ``MAX_NUM_BATCHED_TOKENS`` are knobs.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterable

# Words of a flag or env name that name a secret wherever they stand.
ALWAYS = frozenset(
    {"secret", "password", "passwd", "credential", "credentials", "apikey", "authorization"}
)
LAST = frozenset({"token", "key"})  # a secret only as the last word: --hf-token, OPENAI_KEY
PAIRS = frozenset({"api-key", "private-key", "access-key"})
FILE_WORDS = frozenset({"file", "path", "dir"})  # --token-file names a file, not a secret
VALUE = re.compile(
    r"(?<![\w/.-])(sk-[A-Za-z0-9][A-Za-z0-9_-]{5,}|hf_[A-Za-z0-9]{10,})|\bBearer\s+\S+",
    re.IGNORECASE,
)


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_]+", name.lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a flag (without its dashes and value) or an env name names a secret."""
    words = _words(name)
    if not words or words[-1] in FILE_WORDS:
        return False
    pairs = {f"{a}-{b}" for a, b in itertools.pairwise(words)}
    return bool(ALWAYS & set(words) or PAIRS & pairs or words[-1] in LAST)


def secret_flag(arg: str) -> bool:
    """Whether a command-line argument is a flag that takes a secret."""
    return arg.startswith("-") and secret_name(arg.lstrip("-").split("=", 1)[0])


def shell_words(args: Iterable[str]) -> Iterable[str]:
    """Every word of a command line, the words inside its shell strings too."""
    for arg in args:
        yield arg
        if any(c.isspace() for c in arg):
            try:
                yield from shlex.split(arg)
            except ValueError:  # an unbalanced quote: split on blanks instead
                yield from arg.split()


def secret_in(args: Iterable[str]) -> str | None:
    """What in ``args`` is a secret (the flag, or what its value looks like; never the secret
    itself); None when nothing is."""
    words = list(shell_words(args))
    flag = next((w for w in words if secret_flag(w)), None)
    if flag is not None:
        return flag.split("=", 1)[0]
    if any(VALUE.search(w) for w in words):
        return "a value shaped like an API key or a bearer token"
    return None
