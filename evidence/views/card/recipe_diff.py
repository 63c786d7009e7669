"""The card's recipe diff: for every pair of arms, what their recipes set differently.

Rows are only what differs: the pinned image, each recipe fact, each engine flag and
env knob one arm sets and the other does not (or sets otherwise), and each cell's
declared sampling variants. Renders ``comparison.json``; computes nothing new.
"""

from __future__ import annotations

from itertools import combinations

from evidence.views.card.markdown import table
from faceoff.formats.bundle.comparison import ArmEntry, Comparison

ABSENT = "—"


def recipe_diffs(c: Comparison) -> str:
    parts = [_pair(c, a, b) for a, b in combinations(c.arms, 2)]
    return "\n\n".join(parts) if parts else "A single arm: nothing to compare."


def _pair(c: Comparison, a: ArmEntry, b: ArmEntry) -> str:
    rows = [
        [what, x, y]
        for what, x, y in [
            ("image", a.image or f"{a.lane} lane", b.image or f"{b.lane} lane"),
            *_recipe(a, b),
            *_keyed("engine arg", _flags(a.engine_args), _flags(b.engine_args)),
            *_keyed("env", a.env_knobs, b.env_knobs),
            *_variants(c, a.name, b.name),
        ]
        if x != y
    ]
    title = f"{a.name} versus {b.name}:"
    if not rows:
        return f"{title} the same recipe, engine flags, env knobs and sampling."
    return f"{title}\n\n" + table(["differs", a.name, b.name], rows)


def _recipe(a: ArmEntry, b: ArmEntry) -> list[tuple[str, str, str]]:
    x, y = a.recipe.model_dump(), b.recipe.model_dump()
    return [(f"recipe.{k}", _text(x[k]), _text(y[k])) for k in x]


def _keyed(what: str, x: dict[str, str], y: dict[str, str]) -> list[tuple[str, str, str]]:
    return [(f"{what} {k}", x.get(k, ABSENT), y.get(k, ABSENT)) for k in sorted(x.keys() | y)]


def _flags(args: list[str]) -> dict[str, str]:
    """``--flag value`` and ``--flag=value`` pairs; a bare flag maps to 'set'."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if "=" in arg and arg.startswith("-"):
            key, value = arg.split("=", 1)
        elif i + 1 < len(args) and arg.startswith("-") and not args[i + 1].startswith("-"):
            key, value = arg, args[i + 1]
            i += 1
        else:
            key, value = arg, "set"
        flags[key] = value
        i += 1
    return flags


def _variants(c: Comparison, a: str, b: str) -> list[tuple[str, str, str]]:
    return [
        (f"{cell.id} sampling.{field}", by_arm.get(a, default), by_arm.get(b, default))
        for cell in c.cells
        for field, by_arm in cell.variants.items()
        for default in [_text(getattr(cell.sampling, field))]
    ]


def _text(value: object) -> str:
    return ABSENT if value is None else str(value)
