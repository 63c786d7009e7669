"""A needle_search cell's declared search: the input range, its resolution and its budget.

A needle cell answers at one length; a needle_search cell bisects the input length
between ``low`` and ``high`` for the longest at which the planted marker still comes
back verbatim (``workload.needle_search``), within ``budget`` probes, stopping once the
bounds are ``step`` tokens apart. Its ``input_tokens`` is the high end and its
``requests`` the budget: a matrix entry may leave both out (``search_defaults``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from faceoff.artifact import Spec

MAX_BUDGET = 64  # probes: a bisection of 64 steps resolves any context to one token


class NeedleSearch(Spec):
    low: int = Field(ge=1, description="Input tokens of the first probe (expected to recall).")
    high: int = Field(ge=2, description="Input tokens of the second probe; the cell's input.")
    step: int = Field(ge=1, description="Stop once the bounds are this many tokens apart.")
    budget: int = Field(
        ge=2, le=MAX_BUDGET, description="Probes on each arm at most (low and high first)."
    )

    @model_validator(mode="after")
    def _a_range(self) -> NeedleSearch:
        if self.low >= self.high:
            raise ValueError(f"low = {self.low} must be below high = {self.high}")
        if self.step >= self.high - self.low:
            raise ValueError(
                f"step = {self.step} must be below high − low = {self.high - self.low}, "
                "or the search stops after its two ends"
            )
        return self


def search_defaults(entry: dict[str, Any]) -> dict[str, Any]:
    """A needle_search entry's ``input_tokens``, ``requests``, ``concurrency`` and
    ``warmups``, from its search where the entry leaves them out: applied before
    ``[defaults]``, which hold other cells' values, and before the id is made from them."""
    search = entry.get("search")
    if entry.get("kind") != "needle_search" or not isinstance(search, dict):
        return entry
    filled = {"input_tokens": search.get("high"), "requests": search.get("budget")}
    fixed = {"concurrency": 1, "warmups": 0}
    return {**{k: v for k, v in filled.items() if v is not None}, **fixed, **entry}
