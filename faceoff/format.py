"""Number and word formatting shared by the card and the report. Pure; computes nothing new."""

from __future__ import annotations

from collections.abc import Sequence

GIB = 1024**3
MISSING = "—"


def join_words(items: Sequence[str], conjunction: str) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def rate(value: float | None) -> str:
    """tok/s with a thousands separator and two decimals below 1,000."""
    if value is None:
        return MISSING
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"


def seconds(value: float | None) -> str:
    if value is None:
        return MISSING
    if value < 1:
        return f"{value * 1000:,.1f} ms"
    return f"{value:,.2f} s"


def gib(value: float | None) -> str:
    return MISSING if value is None else f"{value / GIB:,.2f} GiB"


def count(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.0f}"


def percent(value: float | None) -> str:
    """A fraction (1.0 = full) as a percentage."""
    return MISSING if value is None else f"{value * 100:.2f}%"


def ratio(value: float, low: float, high: float) -> str:
    return f"{value:.2f}× [{low:.2f}, {high:.2f}]"


def level(confidence: float) -> str:
    """A confidence level as a percentage: whole where it is whole (95%), else with the
    digits that keep it below 100 % (98.8%, 99.98%), so a sequential look's nominal level
    is neither rounded to its neighbour nor up to certainty."""
    value = confidence * 100
    if abs(value - round(value)) < 1e-9:
        return f"{round(value)}%"
    for digits in range(1, 12):
        if round(value, digits) < 100:
            return f"{value:.{digits}f}%"
    return "100%"
