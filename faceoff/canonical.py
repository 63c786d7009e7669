"""Canonical JSON, content hashes and file hashes.

Canonical form: UTF-8, keys sorted, no insignificant whitespace, floats in Python's
shortest round-trip repr (so 0.1 is always ``0.1``), NaN and infinity refused because they
have no JSON spelling: exactly what ``json.dumps`` writes with those settings. orjson
writes the same bytes several times faster (a large cell's plan is tens of MB, hashed
several times), so it writes every value it spells alike: docs/architecture.md, "Artifact
rules".
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import orjson

from faceoff.bounded import open_regular


def canonical_json(value: Any) -> str:
    fast = _orjson(value)
    return _dumps(value) if fast is None else fast.decode("utf-8")


def canonical_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value``, UTF-8 encoded."""
    fast = _orjson(value)
    return _dumps(value).encode("utf-8") if fast is None else fast


def _orjson(value: Any) -> bytes | None:
    """orjson's canonical JSON of ``value`` where it is json.dumps's, else None."""
    if not (type(value) in (dict, list) and _plain(value)):
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        return None


def _dumps(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


_LEAVES = frozenset({str, int, bool, type(None)})
SMALLEST_SPELLED_ALIKE = 1e-4  # below it orjson and Python spell a float apart


def _plain(value: dict[Any, Any] | list[Any]) -> bool:
    """Only JSON's own types (no subclass, such as an enum), and every float one that
    orjson spells as Python does: no NaN or infinity (json.dumps refuses those, orjson
    writes null), none below 1e-4 but 0."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is float:
            if not (math.isfinite(item) and (abs(item) >= SMALLEST_SPELLED_ALIKE or not item)):
                return False
        elif kind not in _LEAVES:
            return False
    return True


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in chunks so a large file is never held whole."""
    with os.fdopen(open_regular(Path(path)), "rb") as handle:  # a FIFO or link: Unreadable
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_sha256(value: Any) -> str:
    """sha256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_bytes(value))
