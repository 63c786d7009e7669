"""Socket-read arrival stamps (workload.transport) and SSE framing offsets."""

from __future__ import annotations

import time

import aiohttp
import pytest

from faceoff.errors import FaceoffError
from tests.workload.builders import DONE, chunk, planned
from tests.workload.conftest import MODEL, StartSim
from tests.workload.oneshot_server import PROMPT_TOKENS, TOKENS, one_write_server
from workload.client import Exchange, stream_chat
from workload.outcome import Status
from workload.records import Usage
from workload.runner import open_session
from workload.stream import SseFramer
from workload.transport import Arrivals


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
    return request.wire(MODEL)


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
            # the read's own stamp: after the send, before the coroutine saw the headers
            assert read in stamps and ex.send_ns < read < ex.headers_ns  # type: ignore[operator]
    assert server.posts == 2


async def test_arrivals_fall_back_only_without_the_timed_protocol(start_sim: StartSim) -> None:
    sim = start_sim()
    async with open_session(time.perf_counter_ns) as session:
        resp = await session.post(sim.url + "/v1/chat/completions", data=body(5))
        arrivals = Arrivals(resp)
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
