"""One exit-status table, the same in `faceoff --help`, README.md and docs/flows.md: a cron
wrapper reads one meaning per status (was: 1 meant a bug, an audit finding and a failed
restoration alike)."""

from __future__ import annotations

from pathlib import Path

from faceoff.exits import MEANINGS, Exit, table_rows
from tests.foundation.cli import faceoff

REPO = Path(__file__).resolve().parents[2]


def test_every_status_has_one_meaning_and_1_is_only_a_bug() -> None:
    assert set(MEANINGS) == set(Exit)
    assert len(set(MEANINGS.values())) == len(MEANINGS)
    assert "bug" in MEANINGS[Exit.BUG] and all("bug" not in m for c, m in MEANINGS.items()
                                                if c is not Exit.BUG)  # fmt: skip
    assert len({Exit.FINDINGS, Exit.NOT_RESTORED, Exit.REFUSED, Exit.BUG}) == 4


def test_the_help_the_readme_and_the_flows_page_show_the_same_table() -> None:
    shown = faceoff("--help").stdout
    for code, meaning in MEANINGS.items():
        assert f"{code.value:<4}{meaning}" in shown
    for page in ("README.md", "docs/flows.md"):
        text = (REPO / page).read_text(encoding="utf-8")
        assert "\n".join(["| exit | meaning |", "|---|---|", *table_rows()]) in text, page
