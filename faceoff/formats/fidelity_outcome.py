"""A fidelity cell's other files on one arm: its greedy answers, or why it was blocked.

``greedy.json`` (``GreedyAnswers``) holds each greedy prompt's token ids and the ids the
arm generated at temperature 0; ``blocked.json`` (``FidelityBlocked``) says why an arm
could not be scored (its tokenizer differs from the reference's, the engine refused
``prompt_logprobs``, the lane was unusable), so nothing is silently missing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact

# Format history of greedy.json and blocked.json: 1 — first version.
GREEDY_FILE = "greedy.json"
BLOCKED_FILE = "blocked.json"
FIDELITY_DIR = "fidelity"
FLOOR_DIR = "floor"
KEPT_DIR = "windows"  # each window's scores as it ends, until scores.npz holds them all


class GreedyAnswers(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Format version.")
    arm: str = Field(description="The arm that answered.")
    tokens: int = Field(description="Tokens asked of each answer.")
    prompts: list[list[int]] = Field(description="Each prompt's token ids (a window's opening).")
    answers: list[list[int]] = Field(description="The ids generated at temperature 0, in order.")


class FidelityBlocked(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Format version.")
    arm: str = Field(description="The arm not scored.")
    reason: str = Field(description="Reason code, e.g. tokenizer_differs, logprobs_refused.")
    sentence: str = Field(description="What happened and what to do, in words.")


def tokenizer_sentence(arm: str, reference: str, own: str, theirs: str) -> str:
    """Why ``arm`` is blocked ``tokenizer_differs``: both arms named, both ids' hashes."""
    return (
        f"arm {arm!r} tokenizes the corpus differently from the reference {reference!r} "
        f"(ids sha256 {own[:12]} vs {theirs[:12]}): the two vocabularies differ, so their "
        "log-probabilities are of different tokens; compare arms of one tokenizer"
    )
