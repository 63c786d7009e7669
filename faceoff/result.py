"""A value, or the reason there is none: what a step returns when not finding is an answer.

Instead of ``X | str`` (branched on ``isinstance``) or a ``(value, error)`` pair that
may hold both or neither, such a step returns ``Maybe.of(value)`` or
``Maybe.lacking(reason)``; exactly one of ``value`` and ``reason`` is set, and a check
of ``value is None`` narrows it for mypy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Maybe(Generic[T]):
    value: T | None
    reason: str | None = None  # why there is no value; None exactly when there is one

    def __post_init__(self) -> None:
        if (self.value is None) == (self.reason is None):
            raise ValueError("a Maybe holds a value or a reason, exactly one of them")

    @classmethod
    def of(cls, value: T) -> Maybe[T]:
        return cls(value)

    @classmethod
    def lacking(cls, reason: str) -> Maybe[T]:
        return cls(None, reason)
