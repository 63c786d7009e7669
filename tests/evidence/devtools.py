"""Headless Chromium driven over the DevTools protocol: open a page at a viewport width and
evaluate a script in it. Only what the report test needs; the browser is real.

``--window-size`` cannot go below 500 px, so the viewport is set the way DevTools' device
mode sets it (``Emulation.setDeviceMetricsOverride``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

DEADLINE_S = 120.0  # a loaded 2-core host starts Chromium slowly
LISTENING = "DevTools listening on "


class DevTools:
    """One websocket to the browser; commands are sent on a page's flattened session."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, session: str | None = None, **params: Any) -> Any:
        self.next_id += 1
        wanted = self.next_id
        message: dict[str, Any] = {"id": wanted, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        await self.ws.send_str(json.dumps(message))
        while True:
            reply = await self._receive()
            if reply.get("id") == wanted:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    async def event(self, method: str) -> dict[str, Any]:
        while True:
            found = next((e for e in self.events if e.get("method") == method), None)
            if found is not None:
                self.events.remove(found)
                return found
            self.events.append(await self._receive())

    async def _receive(self) -> dict[str, Any]:
        message = await self.ws.receive(timeout=DEADLINE_S)
        assert message.type is aiohttp.WSMsgType.TEXT, message
        return json.loads(message.data)  # type: ignore[no-any-return]


def evaluate_in_page(
    chromium: str, url: str, script: str, *, width: int, profile: Path, env: Mapping[str, str]
) -> Any:
    """Open ``url`` in a ``width`` px viewport, wait for its load, return ``script``'s value."""
    browser = subprocess.Popen(
        [
            chromium,
            *("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"),
            *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
    )
    try:
        endpoint = _endpoint(browser)
        return asyncio.run(_evaluate(endpoint, url, width, script))
    finally:
        browser.terminate()
        browser.wait(timeout=DEADLINE_S)


def _endpoint(browser: subprocess.Popen[str]) -> str:
    """The browser's websocket address, from the line Chromium prints once it listens."""
    assert browser.stderr is not None
    seen = []
    for line in browser.stderr:  # ends when Chromium exits
        if line.startswith(LISTENING):
            return line[len(LISTENING) :].strip()
        seen.append(line)
    raise AssertionError("Chromium exited before listening: " + "".join(seen)[-2000:])


async def _evaluate(endpoint: str, url: str, width: int, script: str) -> Any:
    async with aiohttp.ClientSession() as http, http.ws_connect(endpoint, max_msg_size=0) as ws:
        tools = DevTools(ws)
        target = await tools.send("Target.createTarget", url="about:blank")
        attached = await tools.send(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )
        page = attached["sessionId"]
        await tools.send(
            "Emulation.setDeviceMetricsOverride",
            page,
            width=width,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        await tools.send("Page.enable", page)
        await tools.send("Page.navigate", page, url=url)
        await tools.event("Page.loadEventFired")
        found = await tools.send("Runtime.evaluate", page, expression=script, returnByValue=True)
        assert "exceptionDetails" not in found, found["exceptionDetails"]
        await tools.send("Browser.close")
        return found["result"]["value"]
