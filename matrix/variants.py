"""Declared sampling variants: a cell whose sampling differs by arm, by design.

A matched A/B of a request parameter (the reasoning effort of seed 003's report:
``high`` against ``max`` on the same deployment) must send both arms the same
prompts; a per-cell effort gives each cell its own prompts, and an undeclared
per-arm difference is what pair integrity exists to refuse. So a cell declares it:

    variants = { reasoning_effort = { "effort-high" = "high", "effort-max" = "max" } }

Only the fields in ``VARIANT_FIELDS`` may vary; an arm the variant does not name
keeps the cell's own value. The prompts stay one set, fixed by the cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matrix.model validates with check_variants: no import cycle at run time
    from matrix.model import Cell, Sampling

VARIANT_FIELDS = frozenset({"reasoning_effort"})


def check_variants(cells: Sequence[Cell], arms: Sequence[str]) -> None:
    """Each variant names a field that may vary and arms that run the cell; else ValueError."""
    for cell in cells:
        for field, values in cell.variants.items():
            if field not in VARIANT_FIELDS:
                raise ValueError(
                    f"cell {cell.id!r}: variants.{field} cannot vary by arm; only "
                    f"{', '.join(sorted(VARIANT_FIELDS))} may"
                )
            runs = set(cell.arms or arms)
            unknown = sorted(set(values) - runs)
            if unknown:
                raise ValueError(
                    f"cell {cell.id!r}: variants.{field} names {unknown}, which do not run it"
                )


def sampling_for(cell: Cell, arm: str) -> Sampling:
    """The cell's sampling as ``arm`` sends it."""
    update = {field: values[arm] for field, values in cell.variants.items() if arm in values}
    return cell.sampling.model_copy(update=update) if update else cell.sampling
