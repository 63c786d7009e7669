"""faceoff.result.Maybe: a value or the reason there is none, exactly one of them."""

from __future__ import annotations

import pytest

from faceoff.result import Maybe


def test_a_maybe_holds_a_value_or_a_reason() -> None:
    assert Maybe.of(3).value == 3 and Maybe.of(3).reason is None
    lacking: Maybe[int] = Maybe.lacking("the counter is absent")
    assert lacking.value is None and lacking.reason == "the counter is absent"


@pytest.mark.parametrize(("value", "reason"), [(None, None), (3, "and a reason")])
def test_a_maybe_refuses_both_or_neither(value: int | None, reason: str | None) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Maybe(value, reason)
