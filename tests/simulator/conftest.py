"""Simulator fixtures: servers started as real subprocesses, and an HTTP session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from simulator.launch import SimServer, running

REFERENCE = Path(__file__).parent / "reference"


@pytest.fixture(scope="module")
def tiny() -> Iterator[SimServer]:
    """A tiny-profile server shared by a module's tests (real time: 200 tok/s decode)."""
    with running("tiny") as server:
        yield server


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as client:
        yield client
