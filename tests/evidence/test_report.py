"""report.html: one self-contained page, opened for real in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from evidence.bundle import BundleIndex
from tests.conftest import missing_service

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str:
    for name in CHROMIUM:
        found = shutil.which(name)
        if found:
            return found
    missing_service("headless Chromium", "FACEOFF_REQUIRE_BROWSER", "no chromium on PATH")
    raise AssertionError("unreachable")


def png_pixels(path: Path) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct pixels of an 8-bit RGB/RGBA PNG (stdlib only)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks: dict[bytes, bytes] = {}
    pos = 8
    idat = b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IDAT":
            idat += body
        chunks.setdefault(kind, body)
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels + 1
    rows = [raw[y * stride + 1 : (y + 1) * stride] for y in range(0, height, 37)]  # sampled rows
    pixels = {row[x : x + 3] for row in rows for x in range(0, len(row), channels * 11)}
    return width, height, pixels


def test_the_report_is_self_contained(built: BundleIndex) -> None:
    html = (built.root / "report.html").read_text(encoding="utf-8")
    assert html.count("<svg") >= 2 + 2 * 3  # two bar charts, engine and memory per cell
    assert not re.search(r"(src|href)=\"https?://", html)
    assert "<table>" in html and "Candidate / incumbent ratios" in html
    assert "natural-31600-c2: engine requests running / waiting" in html


@pytest.mark.browser
def test_headless_chromium_renders_the_report(built: BundleIndex, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            chromium(),
            *("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"),
            *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1400,4000",
            (built.root / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert shot.is_file(), done.stderr[-2000:]
    width, height, pixels = png_pixels(shot)
    assert (width, height) == (1400, 4000)
    assert len(pixels) > 20, "the screenshot is (nearly) a single colour"
