"""Canonical JSON is json.dumps's, byte for byte, whichever writer wrote it.

The orjson path must never change a content hash: every plan, receipt, matrix id and
review hash written before it was taken must still verify.
"""

from __future__ import annotations

import enum
import json
import random
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from faceoff.canonical import canonical_bytes, canonical_json


def reference(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def outcome(write: Any, value: Any) -> str:
    try:
        return str(write(value))
    except (TypeError, ValueError) as exc:
        return f"refused: {type(exc).__name__}"


ALPHABET = [
    *map(chr, range(32, 127)),
    *'\x00\x1f\x7f\x80é中\u2028\ufeff\uffff\U0001f600\U0010ffff\n\t\\"',
]


def leaf(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:  # every magnitude, the small ones orjson spells its own way among them
        return rng.choice((1, -1)) * rng.random() * 10.0 ** rng.randint(-30, 30)
    if kind == 1:
        return rng.randint(-(2**70), 2**70)  # beyond 64 bits too: orjson refuses those
    if kind == 2:
        return "".join(rng.choices(ALPHABET, k=rng.randint(0, 8)))
    if kind == 3:
        return rng.choice((True, False, None, 0, -0.0, 0.0001, 1e16, 1e-5))
    return rng.random()


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(3) if depth < 3 else 2
    if kind == 0:
        keys = ("".join(rng.choices(ALPHABET, k=rng.randint(0, 4))) for _ in range(6))
        return {key: value(rng, depth + 1) for key in keys}
    if kind == 1:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return leaf(rng)


def test_random_json_values_are_written_as_json_dumps_writes_them() -> None:
    rng = random.Random(20261201)
    for _ in range(20_000):
        found = value(rng)
        expected = reference(found)
        assert canonical_json(found) == expected, found
        assert canonical_bytes(found) == expected.encode("utf-8"), found


def test_every_character_is_escaped_as_json_dumps_escapes_it() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert canonical_json({"text": text, text[:64]: [text[::-1]]}) == reference(
        {"text": text, text[:64]: [text[::-1]]}
    )


def test_small_floats_keep_pythons_spelling() -> None:
    assert canonical_json([1e-05, 2.5e-07, 0.0001, 1e-300]) == "[1e-05,2.5e-07,0.0001,1e-300]"
    assert canonical_json({"f": 1.0, "g": 1e16, "h": 1e22}) == '{"f":1.0,"g":1e+16,"h":1e+22}'


class Colour(enum.Enum):
    RED = 1


class Phase(enum.StrEnum):
    SCORED = "scored"


@dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    "found",
    [
        {"colour": Colour.RED},  # orjson would write 1; json.dumps refuses
        {"id": uuid.UUID(int=1)},  # orjson would write the string; json.dumps refuses
        {"point": Point(1)},
        {"phase": Phase.SCORED, 3: "int key"},
        {Phase.SCORED: "an enum key", Colour.RED: "refused"},
        {Phase.SCORED: [9.99e-5, 1e-4, -0.0]},
        {"x": [float("nan")]},
        {"x": {"y": float("-inf")}},
        {"lone": "\ud800"},
        [1, (2, 3)],
        "a bare string",
    ],
)
def test_values_json_refuses_or_writes_its_own_way_are_left_to_json(found: Any) -> None:
    assert outcome(canonical_json, found) == outcome(reference, found)
