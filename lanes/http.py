"""A small synchronous HTTP client for readiness, probes and router calls.

Lanes make a handful of short calls, from flow tasks and from the CLI, so a
blocking client is enough. It ignores proxy variables: a lane and its router are
addressed directly. Failures come back as data (``status=None``, ``error``), because
a refused connection during boot is an answer, not an exception.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Protocol

MAX_BODY = 4 * 1024 * 1024  # probes and /v1/models are small; never buffer a runaway body


@dataclass(frozen=True)
class HttpReply:
    status: int | None  # None when no HTTP answer came (refused, reset, timed out)
    body: bytes
    elapsed_s: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def json(self) -> Any:
        return json.loads(self.body)

    def describe(self) -> str:
        if self.status is None:
            return f"no answer ({self.error})"
        snippet = self.body[:200].decode("utf-8", "replace").strip()
        return f"HTTP {self.status}" + (f": {snippet}" if snippet and not self.ok else "")


class Http(Protocol):
    def get(
        self, url: str, *, timeout: float, headers: dict[str, str] | None = None
    ) -> HttpReply: ...

    def post_json(
        self, url: str, payload: Any, *, timeout: float, headers: dict[str, str] | None = None
    ) -> HttpReply: ...


class UrllibHttp:
    """``Http`` over the standard library, without proxies."""

    def __init__(self, max_body: int = MAX_BODY) -> None:
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._max_body = max_body

    def get(self, url: str, *, timeout: float, headers: dict[str, str] | None = None) -> HttpReply:
        return self._send(urllib.request.Request(url, headers=headers or {}), timeout)

    def post_json(
        self, url: str, payload: Any, *, timeout: float, headers: dict[str, str] | None = None
    ) -> HttpReply:
        data = json.dumps(payload).encode("utf-8")
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        return self._send(urllib.request.Request(url, data=data, headers=all_headers), timeout)

    def _send(self, request: urllib.request.Request, timeout: float) -> HttpReply:
        started = time.perf_counter()
        try:
            with self._opener.open(request, timeout=timeout) as response:
                body = response.read(self._max_body)
                return HttpReply(response.status, body, time.perf_counter() - started)
        except urllib.error.HTTPError as exc:
            return HttpReply(exc.code, exc.read(self._max_body), time.perf_counter() - started)
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return HttpReply(None, b"", time.perf_counter() - started, error=str(reason))
