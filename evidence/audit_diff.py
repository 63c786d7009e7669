"""Field-by-field differences between two JSON values, named by dotted path. Pure."""

from __future__ import annotations

from typing import Any

MAX_DIFFERENCES = 20  # past this, the file is plainly not what its inputs give


def differences(stored: Any, fresh: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, stored value, recomputed value) for every leaf that differs."""
    found: list[tuple[str, Any, Any]] = []
    _walk(stored, fresh, path, found)
    return found[:MAX_DIFFERENCES]


def _walk(stored: Any, fresh: Any, path: str, found: list[tuple[str, Any, Any]]) -> None:
    if isinstance(stored, dict) and isinstance(fresh, dict):
        for key in sorted(set(stored) | set(fresh), key=str):
            _walk(stored.get(key), fresh.get(key), _join(path, str(key)), found)
    elif isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        for index, (a, b) in enumerate(zip(stored, fresh, strict=True)):
            _walk(a, b, f"{path}[{index}]", found)
    elif stored != fresh:
        found.append((path or "(whole file)", _short(stored), _short(fresh)))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _short(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 200 else text[:200] + "…"
