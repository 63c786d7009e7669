"""Values as TOML writes them inline: the field reference's examples, ``faceoff init``'s
matrix."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any


def toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def toml_value(value: Any) -> str:
    """``value`` as TOML writes it (inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ "
            + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
            + " }"
        )
    raise TypeError(f"no TOML form for {value!r}")
