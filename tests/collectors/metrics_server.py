"""A real /metrics endpoint on loopback whose behaviour a test can switch mid-run.

It runs aiohttp in its own thread and event loop, so the samplers under test
(threads of the test process) talk to it over real TCP while the test blocks.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable

from aiohttp import web


class MetricsServer:
    """Serves ``body()`` at /metrics; ``mode`` switches to a fault."""

    MODES = ("ok", "hang", "error500", "garbage", "binary", "drop")

    def __init__(self, body: Callable[[], str]) -> None:
        self.body = body
        self.mode = "ok"
        self.drop_family = ""  # wire name whose lines "drop" mode removes
        self.hits = 0
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def start(self) -> MetricsServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        self.hits += 1
        mode = self.mode
        if mode == "hang":
            await asyncio.sleep(3600)
        if mode == "error500":
            return web.Response(status=500, text="Internal Server Error")
        if mode == "garbage":
            return web.Response(text="<html><body>this is not prometheus {{{</body></html>\n")
        if mode == "binary":
            return web.Response(body=b"\xff\xfe\x00garbage")
        text = self.body()
        if mode == "drop":
            text = drop_family(text, self.drop_family)
        return web.Response(text=text, content_type="text/plain")

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        asyncio.run_coroutine_threadsafe(_cancel_the_rest(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


async def _cancel_the_rest() -> None:
    """Cancel handlers still hanging, so the loop closes without pending tasks."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def drop_family(text: str, wire: str) -> str:
    """The exposition without any line of one family (HELP, TYPE and samples)."""
    pattern = re.compile(
        rf"^(# (HELP|TYPE) )?{re.escape(wire)}(_total|_sum|_count|_bucket|_created)?[{{ ]"
    )
    return "\n".join(line for line in text.split("\n") if not pattern.match(line))
