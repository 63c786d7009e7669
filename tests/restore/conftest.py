"""The operator's router for restoration tests: a token-checking proxy on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import free_port
from tests.lanes.router_proxy import RouterProxy
from tests.restore.campaign import TOKEN


@pytest.fixture
def proxy() -> Iterator[RouterProxy]:
    router_proxy = RouterProxy(upstream="", token=TOKEN, port=free_port()).start()
    yield router_proxy
    router_proxy.stop()
