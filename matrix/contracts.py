"""Cell contracts: what a request of a cell asks the engine, whatever its length and load.

Cells of one kind with the same output contract, sampling (as the arm sends it) and needle
depth ask the engine the same thing: one request shows whether the engine honours it. A
pilot sends the contract's longest input (the hardest for the context and the prefill) and,
when that fails, its shortest, to tell a length problem from a contract the engine breaks
at any length. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matrix.cell import Cell, sampling_for

ContractKey = tuple[str, int | None, float, str]


@dataclass(frozen=True)
class Contract:
    key: ContractKey
    cells: tuple[Cell, ...]  # in matrix order

    @property
    def longest(self) -> Cell:
        """The cell of the largest input (the first of equals)."""
        return max(self.cells, key=lambda c: c.peak_input_tokens)

    @property
    def shortest(self) -> Cell:
        return min(self.cells, key=lambda c: c.peak_input_tokens)

    def at_least(self, tokens: int) -> list[Cell]:
        """Its cells whose input is ``tokens`` or more."""
        return [c for c in self.cells if c.peak_input_tokens >= tokens]

    @property
    def words(self) -> str:
        kind, words, _, _ = self.key
        return f"{kind}" + (f", {words}-word contract" if words is not None else "")


def contract_key(cell: Cell, arm: str) -> ContractKey:
    sampling = sampling_for(cell, arm).model_dump_json()
    return (cell.kind.value, cell.output_words, cell.needle_depth, sampling)


def contracts(cells: Sequence[Cell], arm: str) -> list[Contract]:
    """The distinct contracts of ``cells`` as ``arm`` sends them, in order of first cell."""
    grouped: dict[ContractKey, list[Cell]] = {}
    for cell in cells:
        grouped.setdefault(contract_key(cell, arm), []).append(cell)
    return [Contract(key, tuple(found)) for key, found in grouped.items()]
