"""Field-by-field differences between two JSON values, named by dotted path. Pure.

An element of a list is named by its id where it has one, as the card names it
(``cells[natural-600-c1].arms[cand].metrics.ttft_s.p50``, ``ratios[cand/ttft_s]``);
by its index only where it has none.
"""

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
            _walk(a, b, f"{path}[{_label(a, b, index)}]", found)
    elif stored != fresh:
        found.append((path or "(whole file)", _short(stored), _short(fresh)))


ID_KEYS = ("id", "arm", "name", "path")  # the first one an element has names it


def _label(stored: Any, fresh: Any, index: int) -> str:
    """The element's id when both sides agree on it, else its index."""
    if not (isinstance(stored, dict) and isinstance(fresh, dict)):
        return str(index)
    if "metric" in stored and "candidate" in stored:  # a ratio: one per candidate and metric
        keys: tuple[str, ...] = ("candidate", "metric")
    else:
        keys = next(((k,) for k in ID_KEYS if isinstance(stored.get(k), str)), ())
    label = "/".join(str(stored.get(k)) for k in keys)
    same = bool(keys) and all(stored.get(k) == fresh.get(k) for k in keys)
    return label if same else str(index)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _short(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 200 else text[:200] + "…"
