"""The night's window and deadline: when a campaign started at a moment must be over."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from matrix.night_window import Window, budget_end

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("hour", "inside", "closes"),
    [
        (20, False, datetime(2026, 12, 5, 6, tzinfo=BERLIN)),  # before it opens: tonight's
        (23, True, datetime(2026, 12, 5, 6, tzinfo=BERLIN)),
        (1, True, datetime(2026, 12, 4, 6, tzinfo=BERLIN)),  # after midnight: this morning
        (7, False, datetime(2026, 12, 5, 6, tzinfo=BERLIN)),
    ],
)
def test_a_window_across_midnight_closes_at_its_next_close(
    hour: int, inside: bool, closes: datetime
) -> None:
    window = Window.parse("22:00-06:00")
    start = datetime(2026, 12, 4, hour, tzinfo=BERLIN)
    assert window.contains(start, BERLIN) is inside
    assert window.next_close(start, BERLIN) == closes


def test_the_earlier_of_window_and_deadline_ends_the_campaign() -> None:
    start = datetime(2026, 12, 4, 23, tzinfo=BERLIN)
    deadline = datetime(2026, 12, 5, 3, tzinfo=UTC)  # 04:00 in Berlin, before the close
    assert budget_end("22:00-06:00", deadline, start, BERLIN) == deadline
    assert budget_end("22:00-06:00", None, start, BERLIN) == datetime(2026, 12, 5, 6, tzinfo=BERLIN)
    assert budget_end(None, None, start, BERLIN) is None


@pytest.mark.parametrize("text", ["22-06", "22:00-22:00", "22:00 to 06:00"])
def test_a_window_not_written_as_hh_mm_range_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="window"):
        Window.parse(text)
