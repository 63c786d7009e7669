"""Workload fixtures: real simulator processes, plans built over their /tokenize."""

from __future__ import annotations

import itertools
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from faceoff.formats.attempt.request_plan import PlanOptions, RequestPlan
from matrix.cell import Cell, WorkloadKind
from simulator.launch import SimServer, running
from workload.plan import build_plan
from workload.rx_stamps import SO_TIMESTAMPNS, STAMP_SPACE, waited_ns
from workload.tokenizer import LaneTokenizer

MODEL = "sim-tiny"
# A tiny engine that runs C32 at the same 200 tok/s per stream as C1, in real time.
FLAT_DECODE = (
    "--set",
    "timing.startup_s=0",
    "--set",
    "engine.max_num_seqs=64",
    "--set",
    "engine.kv_cache_tokens=262144",
)

StartSim = Callable[..., SimServer]


@pytest.fixture
def kernel_stamping() -> Iterator[None]:
    """The kernel stamps received packets only once a socket has asked, and turns that on
    for the whole host later, from a work queue: a stamped loopback pair is held open
    for the test, once a packet has come back stamped."""
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()) as ours,
    ):
        ours.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        theirs, _ = listener.accept()
        with theirs:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                theirs.send(b"x")
                _, ancillary, _, _ = ours.recvmsg(16, STAMP_SPACE)
                if waited_ns(ancillary, time.time_ns()) is not None:
                    break
                time.sleep(0.01)
            else:
                pytest.fail("the kernel never stamped a received packet within 30 s")
            yield


@pytest.fixture
def start_sim(tmp_path: Path) -> Iterator[StartSim]:
    """Start simulators (stopped at the end): start_sim(time_scale=…, args=[…])."""
    numbers = itertools.count()
    with ExitStack() as stack:

        def start(time_scale: float = 10.0, args: Sequence[str] = ()) -> SimServer:
            log = tmp_path / f"sim-{next(numbers)}.log"
            return stack.enter_context(
                running("tiny", time_scale=time_scale, args=[*FLAT_DECODE, *args], log_path=log)
            )

        yield start


def cell(kind: WorkloadKind = WorkloadKind.NATURAL, **fields: Any) -> Cell:
    base: dict[str, Any] = {"id": f"{kind.value}-c", "kind": kind, "input_tokens": 600}
    base |= {"concurrency": 2, "requests": 4, "sampling": {"max_tokens": 64}}
    if kind is WorkloadKind.CONTROLLED:
        base["output_words"] = 20
    return Cell.model_validate(base | fields)


async def http_plan(url: str, c: Cell, *, model: str = MODEL, **options: Any) -> RequestPlan:
    """The cell's plan, searched on the lane's /tokenize (as the flow builds it)."""
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, url, model)
        return await build_plan(
            c,
            seed=7,
            namespace="workload-tests",
            model=model,
            tokenizer=tokenizer,
            options=PlanOptions(**options),
        )


def token_chunks(trace: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(kind, emit perf_ns, tokens) of the chunks that carried reasoning or content."""
    return [(k, ns, n) for k, ns, _wall, n in trace["chunks"] if k in ("reasoning", "content")]
