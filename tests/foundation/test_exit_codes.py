"""One exit-status table, the same in `faceoff --help`, README.md and docs/flows.md: a cron
wrapper reads one meaning per status (was: 1 meant a bug, an audit finding and a failed
restoration alike)."""

from __future__ import annotations

import re
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


def test_every_page_gives_the_audits_findings_the_tables_status() -> None:
    """Was: two guides said an audit with findings exits 1, the status of a bug."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    said = re.compile(r"(?i)\bexits?\s+(\d+)[^.]{0,40}?\bfindings?\b|(\d+) on any finding")
    found = [(page.name, m.group(0)) for page in pages for m in said.finditer(page.read_text())]
    assert found, "no page states the audit's exit status"
    wrong = [(page, text) for page, text in found if str(Exit.FINDINGS.value) not in text]
    assert wrong == []
