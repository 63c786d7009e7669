"""The night a campaign has: a daily window (``22:00-06:00``) and an absolute deadline.

A campaign runs while the serving incumbent is taken over, so it must end, incumbent
restored, by the time traffic comes back. The window is read in a timezone (the
deployment schedule's, else the host's); the end of a run is the first end of the window
after it starts, or the deadline, whichever comes first.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta, tzinfo

from pydantic import Field

from faceoff.artifact import Spec

WINDOW = re.compile(r"^(?P<start>\d{2}:\d{2})-(?P<end>\d{2}:\d{2})$")


class Window(Spec):
    opens: time = Field(description="When the night's window opens, local time.")
    closes: time = Field(description="When it closes, local time; before opens: the next day.")

    @classmethod
    def parse(cls, text: str) -> Window:
        """``HH:MM-HH:MM``; ValueError naming the form otherwise."""
        match = WINDOW.match(text.strip())
        if match is None:
            raise ValueError(f"window {text!r} is not HH:MM-HH:MM, e.g. '22:00-06:00'")
        opens, closes = (time.fromisoformat(match[k]) for k in ("start", "end"))
        if opens == closes:
            raise ValueError(f"window {text!r} opens and closes at the same minute")
        return cls(opens=opens, closes=closes)

    @property
    def length_s(self) -> float:
        """How long the window stays open, in seconds."""
        day = datetime(2000, 1, 1)
        opens, closes = datetime.combine(day, self.opens), datetime.combine(day, self.closes)
        return ((closes - opens) % timedelta(days=1)).total_seconds()

    def next_open(self, moment: datetime, zone: tzinfo) -> datetime:
        """The first opening of the window after ``moment``, timezone-aware."""
        local = moment.astimezone(zone)
        opening = datetime.combine(local.date(), self.opens, tzinfo=zone)
        return opening if opening > local else opening + timedelta(days=1)

    def contains(self, moment: datetime, zone: tzinfo) -> bool:
        """Whether ``moment`` falls inside the window, read in ``zone``."""
        local = moment.astimezone(zone).time()
        if self.opens < self.closes:
            return self.opens <= local < self.closes
        return local >= self.opens or local < self.closes

    def next_close(self, moment: datetime, zone: tzinfo) -> datetime:
        """The first close of the window after ``moment``, timezone-aware."""
        local = moment.astimezone(zone)
        close = datetime.combine(local.date(), self.closes, tzinfo=zone)
        return close if close > local else close + timedelta(days=1)


def budget_end(
    window: str | None, deadline: datetime | None, start: datetime, zone: tzinfo
) -> datetime | None:
    """When a campaign started at ``start`` must be over: the window's next close or the
    deadline, whichever is first; None when the matrix declares neither."""
    ends = [d for d in (deadline,) if d is not None]
    if window is not None:
        ends.append(Window.parse(window).next_close(start, zone))
    return min(ends) if ends else None
