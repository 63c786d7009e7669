"""The router hook against a real reverse proxy on loopback that requires a bearer token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from lanes.bringup import bring_up
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.probes import probe_payload
from lanes.readiness import Waiting
from lanes.router import RouterHook
from matrix.arm import Probes
from tests.conftest import free_port
from tests.lanes import helpers
from tests.lanes.helpers import PYTHON, arm, context, kill_recorded_processes, now
from tests.lanes.router_proxy import RouterProxy

TOKEN = "router-bearer-4f1c9e"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, RouterProxy]]:
    """A simulator lane behind a token-checking proxy; yields (lane URL, proxy)."""
    proxy_port = free_port()
    the_arm = helpers.simulator_arm()
    lane = open_lane(the_arm, context(tmp_path, the_arm), python=helpers.SIM_PYTHON)
    proxy = RouterProxy(upstream="", token=TOKEN, port=proxy_port)
    try:
        up = bring_up(lane, UrllibHttp(), Waiting(now=now))
        assert up.ok, up.reason
        proxy.upstream = lane.record.base_url
        yield lane.record.base_url, proxy.start()
    finally:
        proxy.stop()
        kill_recorded_processes(tmp_path)


def routed_arm(proxy: RouterProxy, **router: object) -> object:
    return arm(
        router={"url": proxy.url, "token_env": "OP_ROUTER_TOKEN", "model": "llm.primary", **router}
    )


def test_drain_readmit_and_authenticated_smoke_over_http(
    served: tuple[str, RouterProxy],
) -> None:
    _, proxy = served
    the_arm = routed_arm(proxy, drain_url=proxy.admin("drain"), readmit_url=proxy.admin("readmit"))
    hook = RouterHook(the_arm, {"OP_ROUTER_TOKEN": TOKEN}, UrllibHttp(), now)  # type: ignore[arg-type]
    drain = hook.drain()
    assert drain.ok and drain.via == "http" and proxy.drained
    drained = hook.smoke("smoke")
    assert drained.passed == 0 and "HTTP 503" in drained.results[0].detail
    readmit = hook.readmit()
    assert readmit.ok and not proxy.drained and proxy.last("readmit") is not None
    for kind in ("smoke", "json_smoke"):
        summary = hook.smoke(kind)  # type: ignore[arg-type]
        assert summary.ok and summary.line.endswith("2/2") and summary.via == "router"
    assert TOKEN not in drain.detail + readmit.detail


def test_the_proxy_refuses_a_request_without_the_token(served: tuple[str, RouterProxy]) -> None:
    _, proxy = served
    url = f"{proxy.url}/v1/chat/completions"
    payload = probe_payload("smoke", "llm.primary", Probes(smoke_max_tokens=8))
    bare = UrllibHttp().post_json(url, payload, timeout=10)
    wrong = UrllibHttp().post_json(
        url, payload, timeout=10,
        headers={"Authorization": "Bearer nope"},
    )  # fmt: skip
    assert (bare.status, wrong.status, proxy.refused) == (401, 401, 2)


def test_readmit_by_command_redacts_the_token(tmp_path: Path) -> None:
    marker = tmp_path / "readmitted"
    script = (
        "import os, sys; open(sys.argv[1], 'a').write('readmit\\n'); "
        "print('readmitted with', os.environ['OP_ROUTER_TOKEN'])"
    )
    the_arm = arm(
        router={
            "url": "http://127.0.0.1:9",
            "token_env": "OP_ROUTER_TOKEN",
            "readmit_command": [PYTHON, "-c", script, str(marker)],
            "drain_command": [PYTHON, "-c", "import sys; sys.exit(4)"],
        }
    )
    hook = RouterHook(
        the_arm, {"OP_ROUTER_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"}, UrllibHttp(), now
    )
    readmit = hook.readmit()
    assert readmit.ok and readmit.via == "command" and marker.read_text() == "readmit\n"
    assert TOKEN not in readmit.detail and "readmitted with ***" in readmit.detail
    drain = hook.drain()
    assert not drain.ok and "exited 4" in drain.detail


def test_a_missing_router_token_is_named() -> None:
    the_arm = arm(router={"url": "http://127.0.0.1:9", "token_env": "OP_ROUTER_TOKEN"})
    with pytest.raises(FaceoffError) as err:
        RouterHook(the_arm, {}, UrllibHttp(), now)
    assert "OP_ROUTER_TOKEN" in err.value.message and "router.token_env" in err.value.message
    assert RouterHook(the_arm, {"OP_ROUTER_TOKEN": "t"}, UrllibHttp(), now).readmit().via == "none"
