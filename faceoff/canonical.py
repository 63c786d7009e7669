"""Canonical JSON, content hashes and file hashes.

Canonical form: UTF-8, keys sorted, no insignificant whitespace, floats in
Python's shortest round-trip repr (so 0.1 is always ``0.1``), NaN and infinity
refused because they have no JSON spelling.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in chunks so a large file is never held whole."""
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_sha256(value: Any) -> str:
    """sha256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_json(value))
