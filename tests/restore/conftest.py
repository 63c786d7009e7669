"""Restoration tests' fixtures: the operator's router (a token-checking proxy on loopback)
and a workdir whose recorded lanes are killed afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.lanes.helpers import kill_recorded_processes
from tests.lanes.router_proxy import RouterProxy
from tests.restore.campaign import TOKEN


@pytest.fixture
def proxy() -> Iterator[RouterProxy]:
    router_proxy = RouterProxy(upstream="", token=TOKEN, port=free_port()).start()
    yield router_proxy
    router_proxy.stop()


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """A restored incumbent keeps serving after its campaign; it is killed here."""
    yield tmp_path
    for campaign_dir in tmp_path.iterdir():
        if campaign_dir.is_dir():
            kill_recorded_processes(campaign_dir)
