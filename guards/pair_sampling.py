"""What a pair's requests must send alike, and what a cell declares may differ by arm.

Two arms of a pair must send every request with the same sampling parameters, unless
the cell declares the field a variant (matrix/variants.py): then the difference is by
design, listed, and not a mismatch. A variant the chat template renders (the reasoning
effort) may also change the prompt-token vector; the pair then still sent the same
messages, which is what is compared instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import PlannedRequest

COMPARED = ("max_tokens", "temperature", "top_p", "seed", "reasoning_effort", "ignore_eos")
TEMPLATED = frozenset({"reasoning_effort"})  # sent to /tokenize: it may change the vector

Key = tuple[Phase, int]


@dataclass(frozen=True)
class SamplingDiff:
    by_design: list[str]  # "reasoning_effort: 'low' vs 'max'", once per field
    undeclared: list[str]  # fields that differ without being declared, with the first index
    vectors_by_design: set[Key]  # vector differences a templated variant explains


def sampling_differences(
    ours: Mapping[Key, PlannedRequest],
    theirs: Mapping[Key, PlannedRequest],
    declared: frozenset[str],
) -> SamplingDiff:
    by_design: dict[str, str] = {}
    undeclared: dict[str, str] = {}
    vectors: set[Key] = set()
    for key in sorted(set(ours) & set(theirs)):
        a, b = ours[key], theirs[key]
        differ = [f for f in COMPARED if getattr(a, f) != getattr(b, f)]
        for field in differ:
            said = f"{field}: {getattr(a, field)!r} vs {getattr(b, field)!r}"
            target = by_design if field in declared else undeclared
            target.setdefault(field, said if field in declared else f"{said} (first {key[1]})")
        templated = TEMPLATED & declared & set(differ)
        if templated and a.prompt_sha256 != b.prompt_sha256 and a.messages == b.messages:
            vectors.add(key)
    return SamplingDiff(list(by_design.values()), list(undeclared.values()), vectors)
