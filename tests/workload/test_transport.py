"""Socket-read arrival stamps (workload.transport) and SSE framing offsets."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import SimpleNamespace

import aiohttp
import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Status, Usage
from tests.workload.builders import DONE, MS, chunk, planned
from tests.workload.conftest import MODEL, StartSim
from tests.workload.oneshot_server import (
    PROMPT_TOKENS,
    TOKENS,
    http_answer,
    one_write_server,
    vllm_events,
)
from workload.client import Exchange, stream_chat
from workload.request import Body
from workload.runner import open_session
from workload.rx_stamps import stamp_receives
from workload.stream import SseFramer
from workload.transport import Arrivals, Mark


def test_framer_reports_each_event_end_offset_across_reads() -> None:
    one, two = chunk("a"), chunk("b")
    stream = one + two + DONE
    framer, seen = SseFramer(), []
    for start in range(0, len(stream), 7):  # 7-byte reads split events anywhere
        seen += framer.feed(stream[start : start + 7])
    assert [end for _, end in seen] == [len(one), len(one + two), len(stream)]
    assert framer.pending == b""


def test_framer_handles_crlf_and_ignores_comments() -> None:
    framer = SseFramer()
    events = framer.feed(b": keep-alive\r\n\r\ndata: {}\r\n\r\ndata: [DONE]\n\n")
    assert [p for p, _ in events] == [b"{}", b"[DONE]"]


def body(max_tokens: int = 30) -> bytes:
    request = planned(max_tokens=max_tokens, ignore_eos=True, expect_length_finish=True)
    return Body.of(request).wire(MODEL)


async def test_events_are_dated_by_the_socket_read_not_the_coroutine(start_sim: StartSim) -> None:
    sim = start_sim(time_scale=1.0)
    ex = Exchange(planned(max_tokens=30, ignore_eos=True, expect_length_finish=True), due_ns=0)
    reads: list[int] = []

    def clock() -> int:
        reads.append(time.perf_counter_ns())
        return reads[-1]

    async with open_session(clock) as session:
        await stream_chat(session, sim.url + "/v1/chat/completions", body(), ex, clock)
    assert ex.status is not None and ex.status.value == "ok"
    assert len(ex.state.chunk_ns) == 30
    # every chunk time is a socket-read stamp, taken before the coroutine's own stamp
    assert all(t <= max(reads) for t in ex.state.chunk_ns)
    assert ex.state.chunk_ns == sorted(ex.state.chunk_ns)


@pytest.mark.usefixtures("kernel_stamping")
async def test_a_whole_answer_in_one_read_is_dated_by_that_read() -> None:
    """vLLM's short answers often arrive whole in one read; aiohttp has then released
    the connection before the reader starts. Twice on one session: a keep-alive
    connection's next answer is dated by its own read, not filed under the last one."""
    stamps: list[int] = []

    def clock() -> int:
        stamps.append(time.perf_counter_ns())
        return stamps[-1]

    async with one_write_server() as server, open_session(clock) as session:
        for _ in range(2):
            ex = Exchange(planned(), due_ns=0)
            await stream_chat(session, server.url + "/v1/chat/completions", body(), ex, clock)
            assert ex.status is Status.OK, ex.error
            state = ex.state
            assert state.usage == Usage(prompt_tokens=PROMPT_TOKENS, completion_tokens=3)
            assert state.text == "".join(TOKENS) and state.finish_reason == "stop"
            assert state.events == 6 and state.chunk_kinds == ["c"] * 3  # role chunk: no token
            read = state.first_event_ns
            times = (state.first_output_ns, state.first_content_ns, state.last_token_ns)
            assert set(times) | {state.usage_ns, state.done_ns} | set(state.chunk_ns) == {read}
            # the read's kernel stamp: after the send, before the coroutine saw the headers
            assert ex.arrival_stamps == "kernel"
            assert ex.send_ns < read < ex.headers_ns  # type: ignore[operator]
    assert server.posts == 2


async def test_arrivals_fall_back_only_without_the_timed_protocol(start_sim: StartSim) -> None:
    sim = start_sim()
    async with open_session(time.perf_counter_ns) as session:
        resp = await session.post(sim.url + "/v1/chat/completions", data=body(5))
        arrivals = Arrivals.of(resp)
        data = await resp.read()
        assert arrivals.timed
        assert arrivals.at(len(data), fallback_ns=-1) > 0
        assert arrivals.at(len(data) + 1, fallback_ns=-1) == -1  # not arrived (yet)


async def test_a_plain_aiohttp_session_is_refused(start_sim: StartSim) -> None:
    sim = start_sim()
    ex = Exchange(planned(), due_ns=0)
    async with aiohttp.ClientSession() as session:
        with pytest.raises(FaceoffError, match="timed response protocol"):
            await stream_chat(
                session, sim.url + "/v1/chat/completions", body(), ex, time.perf_counter_ns
            )


class HeldAnswerServer:
    """A loopback server on its own thread that answers one POST when told, whole, in one
    ``sendall``, and notes the clock just before and after it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.read, self.answer, self.written = (threading.Event() for _ in range(3))
        self.sent_ns = (0, 0)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn, self.listener:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            headers, _, body = head.partition(b"\r\n\r\n")
            length = int(
                next(
                    h for h in headers.split(b"\r\n") if h.lower().startswith(b"content-length")
                ).split(b":")[1]
            )
            while len(body) < length:
                body += conn.recv(65536)
            self.read.set()
            self.answer.wait(30)
            before = time.perf_counter_ns()
            conn.sendall(http_answer(vllm_events()))
            self.sent_ns = (before, time.perf_counter_ns())
            self.written.set()
            conn.recv(1)  # until the client closes


@pytest.mark.usefixtures("kernel_stamping")
async def test_a_read_the_loop_was_late_for_is_dated_when_its_bytes_arrived() -> None:
    """The kernel's receive stamp: an answer that waited in the socket while the event loop
    was busy is dated when it arrived, not when the loop got to it."""
    server = HeldAnswerServer()
    ex = Exchange(planned(), due_ns=0)
    async with open_session(time.perf_counter_ns) as session:
        url = server.url + "/v1/chat/completions"
        task = asyncio.create_task(stream_chat(session, url, body(), ex, time.perf_counter_ns))
        assert await asyncio.to_thread(server.read.wait, 30)
        server.answer.set()
        assert server.written.wait(30)
        time.sleep(0.2)  # noqa: ASYNC251  (the loop busy: the answer waits in the socket)
        loop_free_ns = time.perf_counter_ns()
        await task
    assert ex.status is Status.OK, ex.error
    assert ex.arrival_stamps == "kernel"
    before, after = server.sent_ns
    read = ex.state.first_event_ns
    assert read is not None and read < loop_free_ns - 100 * MS
    assert before - 5 * MS <= read <= after + 5 * MS  # the clocks' conversion: microseconds


def test_a_transport_without_a_plain_tcp_socket_keeps_the_clocks_stamps() -> None:
    clock = time.perf_counter_ns
    assert not stamp_receives(SimpleNamespace(), clock, lambda *_: None)  # e.g. TLS: no _sock
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        assert not stamp_receives(SimpleNamespace(_sock=udp), clock, lambda *_: None)


def test_a_response_is_kernel_stamped_only_if_every_event_was() -> None:
    arrivals = Arrivals([Mark(10, 1, "k"), Mark(15, 2, "w"), Mark(20, 3, "r")])
    unasked = arrivals.stamps
    seen = [(arrivals.at(end, -1), arrivals.stamp, arrivals.stamps) for end in (10, 15, 20)]
    assert unasked is None
    assert seen == [(1, "k", "kernel"), (2, "w", "kernel"), (3, "r", "read")]
