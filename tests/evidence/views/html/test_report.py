"""report.html: one self-contained page, opened for real in headless Chromium."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlparse

import numpy as np
import pytest

from collectors.telemetry import load_cell_samples
from evidence.bundle.write import BundleIndex
from evidence.views.html import plots
from tests.conftest import missing_service
from tests.evidence.devtools import evaluate_in_page

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str:
    for name in CHROMIUM:
        found = shutil.which(name)
        if found:
            return found
    missing_service("headless Chromium", "FACEOFF_REQUIRE_BROWSER", "no chromium on PATH")
    raise AssertionError("unreachable")


def test_the_report_is_self_contained(built: BundleIndex) -> None:
    text = (built.root / "report.html").read_text(encoding="utf-8")
    assert text.count("<svg") >= 1 + 2 + 2 * 3  # forest, two bar charts, engine/memory per cell
    assert not re.search(r"(src|href)=\"https?://", text)
    assert "<table>" in text and "Candidate / incumbent ratios" in text
    assert "natural-31600-c2: engine requests running / waiting" in text


PROBE = Path(__file__).with_name("page_probe.js")


def probe_page(root: Path, width: int, tmp_path: Path) -> dict[str, Any]:
    """What ``page_probe.js`` measures in report.html laid out at ``width`` px in Chromium."""
    found = evaluate_in_page(
        chromium(),
        (root / "report.html").as_uri(),
        PROBE.read_text(encoding="utf-8"),
        width=width,
        profile=tmp_path / "profile",
        env={"HOME": str(tmp_path)},
    )
    return cast(dict[str, Any], found)


def bundle_file(root: Path, url: str) -> Path:
    """The bundle file a link's resolved URL names; it must not leave the bundle."""
    parsed = urlparse(url)
    assert parsed.scheme == "file", url
    path = Path(unquote(parsed.path)).resolve()
    assert path.is_relative_to(root.resolve()), url
    return path


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 390])
def test_chromium_shows_the_decision_first_and_every_link_resolves_without_overflow(
    bundle_copy: Callable[[], Path], tmp_path: Path, width: int
) -> None:
    root = bundle_copy()
    page = probe_page(root, width, tmp_path)
    assert page["innerWidth"] == width
    assert page["scrollWidth"] <= page["innerWidth"], "the document scrolls sideways"
    decision, restoration, forest = page["decision"], page["restoration"], page["forest"]
    assert decision["text"] == "Decision: pending human review"
    assert restoration["text"] == "Restoration: incumbent exl3-r11 restored"
    assert decision["top"] < 400 and decision["height"] > 0  # above the fold
    assert forest["svgHeight"] > 100 and forest["top"] > decision["top"]
    assert page["plotsTop"] < page["appendixTop"]
    hrefs = {link["href"] for link in page["links"]}
    assert "tickets/glm53-sim-failed-contract-overrun.md" in hrefs
    assert "cells/controlled-8192-c1/exl3-r11/attempt-1/journal.jsonl" in hrefs
    assert "receipt.json" in hrefs and "comparison.json" in hrefs
    assert "#source-1" in hrefs  # a table's source reference leads to the appendix
    for link in page["links"]:
        assert bundle_file(root, link["url"]).is_file(), link["href"]
        assert link["anchored"] is not False, link["href"]  # an in-page target exists
    assert all(t["overflowX"] == "auto" for t in page["tables"])  # a wide one scrolls alone
    if width == 1400:  # and at 1400 px every table fits
        assert all(t["scrollWidth"] <= t["clientWidth"] for t in page["tables"]), page["tables"]


def test_quantity_axes_start_at_zero_so_noise_is_not_drawn_as_a_trend(built: BundleIndex) -> None:
    series = []
    for arm in ("exl3-r11", "nvfp4-r2"):
        samples = load_cell_samples(built.root / "cells" / "natural-31600-c2" / arm / "attempt-1")
        series.append(plots.CellSeries(arm, samples.engine, samples.gpu, samples.host))
    memory = plots.memory_figure("natural-31600-c2", series)
    lane = [float(y) for line in memory.axes[0].get_lines() for y in np.asarray(line.get_ydata())]
    assert lane and min(lane) > 0  # lane memory was sampled (about 0.05 GiB here)
    for figure in (memory, plots.engine_figure("natural-31600-c2", series)):
        for ax in figure.axes:
            assert ax.get_ylim()[0] == 0, ax.get_title()
