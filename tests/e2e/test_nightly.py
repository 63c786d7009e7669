"""Dated (nightly) campaigns: named by the night in the schedule's timezone, never reopened
once closed."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from prefect.server.schemas.schedules import CronSchedule
from prefect.states import StateType

from flows.prefect.flow import campaign
from flows.prefect.flow_runner import result_of
from flows.prefect.nightly import night_of, schedule_timezone
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

BERLIN = "Europe/Berlin"


def scheduled_starts(cron: str, timezone: str, first: str, last: str) -> list[datetime]:
    """The start times Prefect's own schedule gives between two local dates."""
    schedule = CronSchedule(cron=cron, timezone=timezone)
    zone = ZoneInfo(timezone)
    start = datetime.fromisoformat(first).replace(tzinfo=zone)
    end = datetime.fromisoformat(last).replace(tzinfo=zone)
    return [
        datetime.fromisoformat(d.isoformat())
        for d in asyncio.run(schedule.get_dates(start=start, end=end))
    ]


@pytest.mark.parametrize(
    ("first", "last", "nights", "in_utc"),
    [
        (
            "2026-03-28T12:00",
            "2026-03-31T12:00",
            ["20260329", "20260330", "20260331"],
            ["20260329", "20260329", "20260330"],
        ),  # two nights on one date
        (
            "2026-10-23T12:00",
            "2026-10-26T12:00",
            ["20261024", "20261025", "20261026"],
            ["20261023", "20261024", "20261026"],
        ),  # the previous day's date, then 25 skipped
    ],
    ids=["spring-forward", "fall-back"],
)
def test_nights_around_a_dst_change_get_distinct_dates_in_the_schedules_timezone(
    first: str, last: str, nights: list[str], in_utc: list[str]
) -> None:
    starts = scheduled_starts("30 1 * * *", BERLIN, first, last)
    assert [f"{night_of(s, BERLIN):%Y%m%d}" for s in starts] == nights
    assert [f"{night_of(s, None):%Y%m%d}" for s in starts] == in_utc  # what UTC dating gave


def test_the_schedule_timezone_is_the_one_all_schedules_share() -> None:
    assert schedule_timezone([BERLIN]) == BERLIN
    assert schedule_timezone([BERLIN, BERLIN]) == BERLIN
    assert schedule_timezone([BERLIN, "America/New_York"]) is None
    assert schedule_timezone([]) is None
    assert schedule_timezone([None]) == "UTC"


@pytest.mark.prefect
def test_a_dated_run_never_reopens_its_closed_campaign(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    data = matrix("e2e-nightly", [arm("inc", "incumbent", warmups=0),
                                  arm("cand", "candidate", warmups=0)])  # fmt: skip
    data["cells"] = data["cells"][:1]
    path = write_matrix(tmp_path, data)
    first = campaign(matrix=str(path), workdir=str(workdir), dated=True, return_state=True)
    result = result_of(first)
    assert result.campaign.startswith("e2e-nightly-") and result.complete

    again = campaign(matrix=str(path), workdir=str(workdir), dated=True, return_state=True)

    assert again.type is StateType.FAILED
    with pytest.raises(Exception, match=r"closed complete .* never reopens a closed one") as info:
        again.result()
    assert result.campaign in str(info.value)
    assert len(list((workdir / result.campaign / "lanes" / "inc").glob("campaign-*"))) == 1
