"""Assembling and running the server: build the parts, bind, boot, serve until stopped.

The socket is bound first so that ``/health`` answers 503 while the simulated
engine "loads" for ``startup_s``; then the boot log's KV-cache lines are printed
and ``/health`` turns 200. Output goes through the injected ``emit``; fatal
faults through the injected ``on_fatal`` (the entry point owns the process).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from aiohttp import web

from simulator.api import Api
from simulator.bootlog import listening_line, ready_lines, starting_lines
from simulator.engine import Engine
from simulator.faults import FaultState
from simulator.gpu import VirtualGpus
from simulator.groundtruth import GroundTruth
from simulator.logits import LogitModel
from simulator.metrics import Families
from simulator.profile import Profile
from simulator.recorder import Recorder
from simulator.tokenizer import Tokenizer

MAX_BODY_BYTES = 256 * 2**20  # a 300K-token prompt is a few MB of JSON


@dataclass(frozen=True)
class ServerConfig:
    profile: Profile
    host: str = "127.0.0.1"
    port: int = 8000  # 0 picks a free port; the boot log names it
    time_scale: float = 1.0
    served_model_name: str | None = None
    model_path: str | None = None
    ground_truth: Path | None = None
    gpus: int = 0  # virtual GPUs; 0: the profile's tensor_parallel_size

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.profile.model.served_model_name

    @property
    def root(self) -> str:
        return self.model_path or self.profile.model.model_path


def build(config: ServerConfig, on_fatal: Callable[[str, int], None]) -> Api:
    profile = config.profile
    families = Families(profile, config.model_name, legacy=profile.legacy_names)
    recorder = Recorder(families, profile.speculative.num_speculative_tokens)
    faults = FaultState(profile.faults)
    devices = config.gpus or profile.model.tensor_parallel_size
    gpus = VirtualGpus(profile, devices, faults, time.perf_counter_ns)
    tokenizer = Tokenizer.build()
    return Api(
        profile=profile,
        model_name=config.model_name,
        model_path=config.root,
        tokenizer=tokenizer,
        logits=LogitModel(profile.logits, tokenizer.vocab_size),
        engine=Engine(profile, recorder, time_scale=config.time_scale, gpus=gpus),
        families=families,
        faults=faults,
        gpus=gpus,
        truth=GroundTruth(config.ground_truth),
        on_fatal=on_fatal,
        started=int(time.time()),
        fingerprint=f"vllm-{profile.model.vllm_version}-{profile_digest(profile)}",
    )


def profile_digest(profile: Profile) -> str:
    return hashlib.sha256(repr(profile).encode()).hexdigest()[:8]


def make_app(api: Api) -> web.Application:
    app = web.Application(middlewares=[api.middleware], client_max_size=MAX_BODY_BYTES)
    app.add_routes(api.routes())
    return app


def bound_port(runner: web.AppRunner) -> int:
    return int(runner.addresses[0][1])


async def serve(
    config: ServerConfig,
    *,
    emit: Callable[[str], None],
    on_fatal: Callable[[str, int], None],
    stop: asyncio.Event,
) -> None:
    """Serve until ``stop`` is set; an engine failure propagates."""
    api = build(config, on_fatal)
    runner = web.AppRunner(make_app(api), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, config.host, config.port).start()
        announce(config, api, emit, bound_port(runner))
        engine = asyncio.create_task(api.engine.run())
        boot = asyncio.create_task(become_ready(config, api, emit))
        stopper = asyncio.create_task(stop.wait())
        await asyncio.wait({engine, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in (engine, boot, stopper):
            task.cancel()
        if engine.done() and not engine.cancelled() and engine.exception():
            raise engine.exception()  # type: ignore[misc]
    finally:
        await runner.cleanup()
        api.truth.close()


def announce(config: ServerConfig, api: Api, emit: Callable[[str], None], port: int) -> None:
    now, pid = datetime.now(), os.getpid()
    lines = starting_lines(
        config.profile, model_name=config.model_name, model_path=config.root, pid=pid, now=now
    )
    for line in [*lines, listening_line(config.host, port, pid, now)]:
        emit(line)


async def become_ready(config: ServerConfig, api: Api, emit: Callable[[str], None]) -> None:
    startup = config.profile.timing.startup_s
    await asyncio.sleep(startup / config.time_scale)
    pid = os.getpid()
    for line in ready_lines(config.profile, pid=pid, now=datetime.now(), load_s=startup):
        emit(line)
    api.ready = True
