"""The night's budget: what is kept after an admitted pass. Pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from faceoff.formats.passes import ArmWalk
from flows.campaign.budget import SAFETY, NightSoFar, admit

START = datetime(2026, 12, 7, 22, 0, tzinfo=UTC)


def night(*walks: tuple[str, int, int]) -> NightSoFar:
    """Walks as (arm, start, end) in seconds after START, one cell of 1 s each."""
    found = [
        ArmWalk(arm=arm, started_at=START + timedelta(seconds=a),
                ended_at=START + timedelta(seconds=b), cells=["c"])
        for arm, a, b in walks
    ]  # fmt: skip
    return NightSoFar(found, {("c", "inc"): 1.0, ("c", "cand"): 1.0}, {"c": "c"})


def test_the_look_after_the_next_pass_is_kept_as_long_as_this_one_took() -> None:
    measured = night(("inc", 0, 10), ("cand", 10, 20))
    assert measured.look_reserve(START + timedelta(seconds=28)) == SAFETY * 8
    assert night().look_reserve(START) == 0.0  # nothing walked yet: no look to measure


def test_a_pass_that_fits_only_without_its_look_is_not_admitted() -> None:
    measured = night(("inc", 0, 10), ("cand", 10, 20))
    now = START + timedelta(seconds=28)
    end = now + timedelta(seconds=40)
    restore = measured.restore_reserve("inc")
    assert restore is not None
    needed = 40 - restore - 1  # fits beside the restoration alone
    assert admit(needed, restore, now, end).fits
    assert not admit(needed, restore + measured.look_reserve(now), now, end).fits
