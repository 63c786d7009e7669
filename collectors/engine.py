"""The engine sampler: scrape a lane's ``/metrics`` each tick, one EngineSample per line.

The scrape has a total deadline shorter than the period, so a hanging endpoint
costs one sample, never the schedule. The HTTP client (aiohttp) lives in a
private event loop owned by the sampler's thread, apart from any other loop of
the orchestrator. The raw text of the first and the last successful scrape of
the cell is kept beside the samples.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp

from collectors.aliases import AliasTable
from collectors.prometheus import MetricsParseError, parse_metrics
from collectors.sampler import Clocks, Tick, tick_fields
from faceoff.files import JsonlAppender, write_text_atomic
from faceoff.formats.attempt.collector_samples import EngineSample, EngineStatus
from faceoff.formats.attempt.stalls import ENGINE_FILE, SCRAPE_FIRST, SCRAPE_LAST


@dataclass(frozen=True)
class Scrape:
    """One answer (or non-answer) of a /metrics endpoint."""

    status: EngineStatus
    http_status: int | None = None
    text: str | None = None
    error: str | None = None


class MetricsSource(Protocol):
    """Where scrapes come from; the real one is HTTP, opened and used in one thread."""

    def open(self) -> None: ...

    def fetch(self) -> Scrape: ...

    def close(self) -> None: ...


class HttpMetricsSource:
    """GET ``url`` with a total deadline, through aiohttp in a private event loop."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None

    def open(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._session = self._loop.run_until_complete(self._new_session())

    async def _new_session(self) -> aiohttp.ClientSession:
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        return aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=1))

    def fetch(self) -> Scrape:
        if self._loop is None:
            raise RuntimeError("HttpMetricsSource.fetch before open")
        return self._loop.run_until_complete(self._get())

    async def _get(self) -> Scrape:
        assert self._session is not None
        try:
            async with self._session.get(self.url) as response:
                body = await response.read()
                if response.status != 200:
                    error = f"HTTP {response.status}: {body[:200].decode('utf-8', 'replace')}"
                    return Scrape(EngineStatus.HTTP_ERROR, response.status, error=error)
                return _decoded(response.status, body)
        except TimeoutError:
            error = f"no complete answer within {self.timeout_s:g} s"
            return Scrape(EngineStatus.TIMEOUT, error=error)
        except (aiohttp.ClientError, OSError) as exc:
            return Scrape(EngineStatus.UNREACHABLE, error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self._loop is None:
            return
        if self._session is not None:
            self._loop.run_until_complete(self._session.close())
        self._loop.close()
        self._loop = None


def _decoded(http_status: int, body: bytes) -> Scrape:
    try:
        return Scrape(EngineStatus.OK, http_status, text=body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return Scrape(EngineStatus.PARSE_ERROR, http_status, error=f"body is not UTF-8: {exc}")


class EngineSampler:
    """Turns each tick into an EngineSample line; drains until the engine is idle."""

    name = "engine"

    def __init__(
        self,
        source: MetricsSource,
        folder: Path,
        table: AliasTable,
        *,
        clocks: Clocks,
        drain_timeout_s: float = 2.0,
        drain_retry_s: float = 0.1,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.source = source
        self.folder = Path(folder)
        self.table = table
        self.clocks = clocks
        self.drain_timeout_s = drain_timeout_s
        self.drain_retry_s = drain_retry_s
        self._sleep = sleep
        self._appender: JsonlAppender | None = None
        self._first_text: str | None = None
        self._last_text: str | None = None

    @property
    def path(self) -> Path:
        return self.folder / ENGINE_FILE

    def open(self) -> None:
        self._appender = JsonlAppender(self.path)
        self.source.open()

    def take(self, tick: Tick) -> None:
        sample, text = self._sample(tick)
        if tick.final:
            sample, text = self._settle(tick, sample, text)
        self._keep(text)
        assert self._appender is not None
        self._appender.append(sample)

    def close(self) -> None:
        try:
            if self._last_text is not None:
                write_text_atomic(self.folder / SCRAPE_LAST, self._last_text)
        finally:
            self.source.close()
            if self._appender is not None:
                self._appender.close()

    def _sample(self, tick: Tick) -> tuple[EngineSample, str | None]:
        wall = self.clocks.wall()
        scrape = self.source.fetch()
        metrics, status, error = None, scrape.status, scrape.error
        if scrape.text is not None:
            try:
                metrics = parse_metrics(scrape.text, self.table)
            except MetricsParseError as exc:
                status, error = EngineStatus.PARSE_ERROR, str(exc)
        latency = self.clocks.mono_ns() - tick.actual_ns
        sample = EngineSample(
            **tick_fields(tick, wall, latency),
            status=status,
            http_status=scrape.http_status,
            error=error,
            metrics=metrics,
        )
        return sample, scrape.text if metrics is not None else None

    def _settle(
        self, tick: Tick, sample: EngineSample, text: str | None
    ) -> tuple[EngineSample, str | None]:
        """Re-scrape the drain until it succeeds with no request running or waiting."""
        deadline = tick.actual_ns + int(self.drain_timeout_s * 1e9)
        while _unsettled(sample) and self.clocks.mono_ns() < deadline:
            self._sleep(self.drain_retry_s)
            now = self.clocks.mono_ns()
            retry = Tick(tick.seq, now, now, tick.period_ns, final=True)
            sample, text = self._sample(retry)
        return sample, text

    def _keep(self, text: str | None) -> None:
        if text is None:
            return
        if self._first_text is None:
            self._first_text = text
            write_text_atomic(self.folder / SCRAPE_FIRST, text)
        self._last_text = text


def _unsettled(sample: EngineSample) -> bool:
    """A drain sample that failed, or saw requests still in the engine, is retried."""
    return sample.metrics is None or sample.metrics.requests_in_engine > 0
