"""A real HTTP reverse proxy on loopback that stands in for an operator's router.

It requires a bearer token on every request, forwards ``/v1/*`` to one upstream
lane, answers 503 while the lane is drained, and remembers when it was drained
and readmitted. It runs its own event loop in a thread so that the test, a
separate orchestrator process and ``faceoff restore`` can all talk to it.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import ClientSession, ClientTimeout, web


@dataclass
class RouterProxy:
    upstream: str
    token: str
    port: int
    drained: bool = False
    events: list[tuple[str, datetime]] = field(default_factory=list)
    refused: int = 0  # requests without the right token
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_base(self) -> str:
        return f"{self.url}/admin/upstreams/llm"

    def admin(self, action: str) -> str:
        return f"{self.admin_base}/{action}"

    def start(self) -> RouterProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("router proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._runner is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(10)

    def last(self, action: str) -> datetime | None:
        times = [at for name, at in self.events if name == action]
        return times[-1] if times else None

    def _serve(self, ready: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._open())
        ready.set()
        self._loop.run_forever()

    async def _open(self) -> None:
        app = web.Application(middlewares=[self._auth])
        app.router.add_post("/admin/upstreams/llm/{action}", self._admin)
        app.router.add_route("*", "/v1/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    @web.middleware
    async def _auth(self, request: web.Request, handler):  # type: ignore[no-untyped-def]
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            self.refused += 1
            return web.json_response({"error": "missing or wrong bearer token"}, status=401)
        return await handler(request)

    async def _admin(self, request: web.Request) -> web.Response:
        action = request.match_info["action"]
        if action not in ("drain", "readmit"):
            return web.json_response({"error": f"unknown action {action}"}, status=404)
        self.drained = action == "drain"
        self.events.append((action, datetime.now(UTC)))
        return web.json_response({"upstream": "llm", "state": action})

    async def _forward(self, request: web.Request) -> web.Response:
        if self.drained:
            return web.json_response({"error": "upstream drained"}, status=503)
        body = await request.read()
        headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
        async with (
            ClientSession(timeout=ClientTimeout(total=60)) as session,
            session.request(
                request.method, f"{self.upstream}{request.path}", data=body, headers=headers
            ) as reply,
        ):
            payload = await reply.read()
            return web.Response(status=reply.status, body=payload, content_type=reply.content_type)
