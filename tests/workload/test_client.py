"""The client against the real simulator over loopback: timing, statuses, stops."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase, RequestOutcome, RequestRole, Status
from faceoff.formats.attempt.request_plan import RequestPlan
from matrix.cell import WorkloadKind
from matrix.model import ClientReceive
from simulator.groundtruth import read_ground_truth
from tests.workload.conftest import StartSim, cell, http_plan, token_chunks
from tests.workload.oneshot_server import PROMPT_TOKENS, one_write_server, vllm_events
from workload.client import RunContext
from workload.journal import JournalWriter, read_journal
from workload.runner import CellRunner, RunReport
from workload.tokenizer import LaneTokenizer

MS = 1_000_000


def runner_for(plan: RequestPlan, url: str, receive: ClientReceive = "sleep") -> CellRunner:
    context = RunContext(
        cell_id=plan.cell.id,
        arm="incumbent",
        attempt=1,
        plan_sha256=plan.sha256(),
        client_run="test",
        wall_anchor_utc=datetime.now(UTC),
        mono_anchor_ns=time.perf_counter_ns(),
        receive=receive,
    )
    return CellRunner(plan, url, context, time.perf_counter_ns)


async def run(
    plan: RequestPlan,
    url: str,
    journal: Path,
    deadline_s: float = 60.0,
    receive: ClientReceive = "sleep",
) -> tuple[RunReport, list[RequestOutcome]]:
    runner = runner_for(plan, url, receive)
    with JournalWriter(journal) as writer:
        report = await runner.run(writer, deadline_s)
    contents = read_journal(journal)
    assert contents.intact
    return report, contents.outcomes


@pytest.mark.parametrize("receive", ["sleep", "spin"])
async def test_a_cell_matches_the_servers_ground_truth(
    start_sim: StartSim, tmp_path: Path, receive: ClientReceive
) -> None:
    """Each chunk dated at or after the simulator's stamp just before its write, whether the
    client's loop sleeps or spins while requests are in flight (journaled on each line)."""
    truth_path = tmp_path / "truth.jsonl"
    sim = start_sim(args=["--ground-truth", str(truth_path)])
    plan = await http_plan(sim.url, cell(warmups=1))
    report, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl", receive=receive)
    assert report.statuses == {"ok": 5} and report.stopped_by is None
    assert {o.client_receive for o in outcomes} == {receive}
    assert [o.phase for o in outcomes].count(Phase.WARMUP) == 1
    truth = read_ground_truth(truth_path)
    for outcome in outcomes:
        assert outcome.usage is not None and outcome.response_id in truth
        # the lane's /tokenize count is what the engine prefilled
        assert outcome.usage.prompt_tokens == outcome.input_tokens
        served = token_chunks(truth[outcome.response_id])
        assert len(served) == len(outcome.chunk_offsets_us)
        assert sum(n for _, _, n in served) == outcome.usage.completion_tokens
        assert outcome.chunk_kinds == "".join(k[0] for k, _, _ in served)
        assert len(outcome.chunk_stamps or "") == len(served)  # how each chunk was dated
        arrivals = [outcome.send_ns + us * 1000 for us in outcome.chunk_offsets_us]  # type: ignore[operator]
        for (_, emitted, _), arrived in zip(served, arrivals, strict=True):
            assert arrived + 1000 >= emitted  # µs offsets floor; nothing arrives before it is sent
        # reasoning comes first; its last chunk and the first content chunk may arrive in
        # one socket read on a busy host, and then share that read's stamp
        assert outcome.chunk_kinds.startswith("r")
        assert outcome.first_output_ns <= outcome.first_content_ns  # type: ignore[operator]


async def test_answers_that_arrive_in_one_read_are_journaled_ok(
    start_sim: StartSim, tmp_path: Path
) -> None:
    """A real vLLM's short answer can arrive whole in one socket read, on a keep-alive
    connection the client opened beforehand."""
    plan = await http_plan(start_sim().url, cell(warmups=1))
    async with one_write_server() as server:
        report, outcomes = await run(plan, server.url, tmp_path / "journal.jsonl")
    assert report.statuses == {"ok": 5} and report.prewarm_error is None
    for o in outcomes:
        assert o.usage is not None and o.usage.prompt_tokens == PROMPT_TOKENS
        assert o.usage.completion_tokens == len(o.chunk_offsets_us) == 3
        read = o.first_output_ns  # the one read carried every event
        assert {o.first_event_ns, o.first_content_ns, o.last_token_ns, o.usage_ns} == {read}
        assert o.done_ns == read and o.send_ns < read < o.headers_ns  # type: ignore[operator]
        assert len(set(o.chunk_offsets_us)) == 1


@pytest.mark.usefixtures("kernel_stamping")
async def test_send_is_when_the_bytes_were_written_and_schedule_delay_is_its_own_field(
    start_sim: StartSim, tmp_path: Path
) -> None:
    plan = await http_plan(start_sim().url, cell(concurrency=1, requests=3))
    async with one_write_server() as server:
        _, outcomes = await run(plan, server.url, tmp_path / "journal.jsonl")
    assert len(outcomes) == len(server.received_ns) == 3
    for o, received_ns in zip(outcomes, server.received_ns, strict=True):
        assert o.schema_version == 4 and o.arrival_stamps == "kernel"
        assert o.due_ns is not None and o.queued_ns is not None and o.send_ns is not None
        # due, then begun, then written, then read by the server, then answered
        assert o.due_ns <= o.queued_ns <= o.send_ns <= received_ns <= o.first_event_ns  # type: ignore[operator]
        assert o.schedule_delay_ns == o.send_ns - o.due_ns


async def test_a_client_fault_in_one_request_journals_it_and_the_others(
    start_sim: StartSim, tmp_path: Path
) -> None:
    """A choice that is not a JSON object makes the stream reduction raise where nothing
    expects it; that request still gets its line, naming the fault, and so does the rest."""
    plan = await http_plan(start_sim().url, cell(concurrency=2, requests=4))
    odd = plan.requests[1].canary

    def answer(body: dict[str, object]) -> list[dict[str, object]]:
        events = vllm_events()
        if odd in json.dumps(body):
            events[1]["choices"] = ["not an object"]
        return events

    async with one_write_server(answer) as server:
        report, outcomes = await run(plan, server.url, tmp_path / "journal.jsonl")
    assert report.statuses == {"ok": 3, "stream_error": 1} and report.stopped_by is None
    (bad,) = [o for o in outcomes if o.status is Status.STREAM_ERROR]
    assert bad.canary == odd and bad.send_ns is not None
    assert bad.error is not None and bad.error.startswith("client error: AttributeError")


async def test_a_run_cancelled_from_outside_still_journals_every_request(
    start_sim: StartSim, tmp_path: Path
) -> None:
    plan = await http_plan(start_sim().url, cell(concurrency=1, requests=4))
    journal = tmp_path / "journal.jsonl"
    async with one_write_server() as server:
        server.answering.clear()
        runner = runner_for(plan, server.url)
        with JournalWriter(journal) as writer:
            task = asyncio.create_task(runner.run(writer, 60.0))
            await asyncio.wait_for(server.received.wait(), timeout=60)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    outcomes = read_journal(journal).outcomes
    assert sorted(o.index for o in outcomes) == list(range(4))
    assert [o.error for o in outcomes] == ["cancelled in flight: cancel"] + [
        "never sent: run ended"
    ] * 3


async def test_streams_start_together_and_run_closed_loop(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    plan = await http_plan(sim.url, cell(concurrency=3, requests=6))
    _, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    by_stream: dict[int, list[RequestOutcome]] = {}
    for o in sorted(outcomes, key=lambda o: o.send_ns or 0):
        by_stream.setdefault(o.stream, []).append(o)
    firsts = [s[0] for s in by_stream.values()]
    assert len({o.due_ns for o in firsts}) == 1  # one aligned start for every stream
    sends = [o.send_ns or 0 for o in firsts]
    assert max(sends) - min(sends) < 250 * MS  # generous on a shared host
    for first, second in by_stream.values():
        assert second.due_ns == first.end_ns  # due when the stream's previous one ended
        assert (second.send_ns or 0) >= first.end_ns


async def test_needle_and_contract_outcomes_are_checked(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    needle = await http_plan(sim.url, cell(WorkloadKind.NEEDLE, input_tokens=2000))
    _, outcomes = await run(needle, sim.url, tmp_path / "needle.jsonl")
    assert all(o.marker_found for o in outcomes)
    assert {o.marker_expected for o in outcomes} == {r.marker for r in needle.requests}
    controlled = await http_plan(sim.url, cell(WorkloadKind.CONTROLLED))
    _, outcomes = await run(controlled, sim.url, tmp_path / "controlled.jsonl")
    assert {(o.status, o.output_words, o.contract_words) for o in outcomes} == {(Status.OK, 20, 20)}


async def test_an_overrun_contract_is_journaled_as_length_limit_with_its_evidence(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(args=["--fault", "contract_overrun=true"])
    plan = await http_plan(sim.url, cell(WorkloadKind.CONTROLLED, requests=2, concurrency=1))
    _, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    for o in outcomes:
        assert o.status is Status.LENGTH_LIMIT and o.finish_reason == "length"
        assert o.usage is not None and o.usage.completion_tokens == 64
        assert o.output_words > (o.contract_words or 0)


async def test_http_errors_and_refusals_keep_the_status_and_body(
    start_sim: StartSim, tmp_path: Path
) -> None:
    failing = start_sim(args=["--fault", "error_rate=1.0"])
    plan = await http_plan(failing.url, cell(requests=2, concurrency=1))
    _, outcomes = await run(plan, failing.url, tmp_path / "errors.jsonl")
    assert {(o.status, o.refusal) for o in outcomes} == {(Status.HTTP_ERROR, False)}
    assert all(o.http_status and o.http_status >= 500 and o.error for o in outcomes)
    refusing = start_sim(args=["--fault", "refuse_above_tokens=300"])
    plan = await http_plan(refusing.url, cell(requests=2, concurrency=1))
    _, outcomes = await run(plan, refusing.url, tmp_path / "refusals.jsonl")
    assert {(o.status, o.http_status, o.refusal) for o in outcomes} == {
        (Status.HTTP_ERROR, 400, True)
    }


async def test_a_lane_that_dies_mid_cell_leaves_stream_errors(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(args=["--fault", "crash_after_requests=1"])
    plan = await http_plan(sim.url, cell(requests=3, concurrency=1))
    report, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    assert [o.status for o in outcomes] == [Status.OK, Status.STREAM_ERROR, Status.STREAM_ERROR]
    assert report.journaled == 3
    assert all(o.error for o in outcomes[1:])


async def test_per_request_deadline_times_out_with_partial_timing(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(time_scale=1.0)
    slow = cell(
        requests=2,
        concurrency=1,
        request_deadline_s=0.3,
        sampling={"max_tokens": 400, "ignore_eos": True},
    )
    plan = await http_plan(sim.url, slow)
    _, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    for o in outcomes:
        assert o.status is Status.TIMEOUT and o.error == "request deadline of 0.3 s reached"
        assert 10 < len(o.chunk_offsets_us) < 400
        assert o.end_ns - (o.send_ns or 0) == pytest.approx(0.3e9, abs=0.25e9)


async def test_cell_deadline_journals_every_request_once(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim(time_scale=1.0)
    long = cell(requests=6, concurrency=2, sampling={"max_tokens": 300, "ignore_eos": True})
    plan = await http_plan(sim.url, long)
    report, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl", deadline_s=0.5)
    assert report.stopped_by == "cell deadline of 0.5 s reached"
    assert sorted(o.index for o in outcomes) == list(range(6))
    in_flight = [o for o in outcomes if o.send_ns is not None]
    never_sent = [o for o in outcomes if o.send_ns is None]
    assert len(in_flight) == 2 and len(never_sent) == 4
    assert all(o.status is Status.CANCELLED for o in outcomes)
    assert all(o.error == "cancelled in flight: cell deadline of 0.5 s reached" for o in in_flight)
    assert all(o.chunk_offsets_us for o in in_flight)  # what had arrived is kept
    assert all(o.error == "never sent: cell deadline of 0.5 s reached" for o in never_sent)


async def test_session_turn_two_follows_turn_one_on_its_stream(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    plan = await http_plan(sim.url, cell(WorkloadKind.SESSION_REUSE, requests=4, concurrency=2))
    _, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    by_index = {o.index: o for o in outcomes}
    for turn_1, turn_2 in ((0, 1), (2, 3)):
        first, second = by_index[turn_1], by_index[turn_2]
        assert (first.role, second.role) == (RequestRole.TURN_1, RequestRole.TURN_2)
        assert first.stream == second.stream and (second.send_ns or 0) >= first.end_ns
        assert second.usage and first.usage
        assert second.usage.prompt_tokens > first.usage.prompt_tokens


async def test_a_session_returns_after_another_sessions_turn_one(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    interleaved = cell(
        WorkloadKind.SESSION_REUSE, requests=4, concurrency=1, session_order="after_another"
    )
    plan = await http_plan(sim.url, interleaved)
    _, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    sent = [o.index for o in sorted(outcomes, key=lambda o: o.send_ns or 0)]
    assert sent == [0, 2, 1, 3]  # A1, B1, A2, B2 on the one stream
    by_index = {o.index: o for o in outcomes}
    assert (by_index[1].send_ns or 0) >= by_index[2].end_ns  # A2 after B1 ended


async def test_head_of_line_shorts_are_sent_behind_the_long_prefill(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    hol = cell(WorkloadKind.HEAD_OF_LINE, input_tokens=4000, requests=3, concurrency=3)
    plan = await http_plan(sim.url, hol, short_input_tokens=200, hol_delay_ms=100)
    _, outcomes = await run(plan, sim.url, tmp_path / "journal.jsonl")
    long = next(o for o in outcomes if o.role is RequestRole.LONG_PREFILL)
    for short in (o for o in outcomes if o.role is RequestRole.SHORT):
        # stream 1 due 100 ms before the long one (decoding when it lands), the others 100 ms
        # behind it, and never sent early; how late a send ran on a loaded host is schedule
        # delay, not the layout
        offset = -100 if short.stream == 1 else 100
        assert short.due_ns - long.due_ns == offset * MS  # type: ignore[operator]
        assert short.send_ns >= short.due_ns  # type: ignore[operator]
        assert short.usage and short.usage.prompt_tokens < 250


async def test_a_tampered_plan_is_refused_before_anything_is_sent(
    start_sim: StartSim, tmp_path: Path
) -> None:
    sim = start_sim()
    plan = await http_plan(sim.url, cell(requests=1, concurrency=1))
    edited = plan.requests[0].model_copy(update={"max_tokens": 9})
    bad = plan.model_copy(update={"requests": [edited]})
    with pytest.raises(FaceoffError, match="body sha256 differs"):
        await run(bad, sim.url, tmp_path / "journal.jsonl")
    assert not (tmp_path / "journal.jsonl").exists()


async def test_lane_tokenizer_caches_by_request_body_and_reports_errors(
    start_sim: StartSim,
) -> None:
    sim = start_sim()
    async with aiohttp.ClientSession() as session:
        tokenizer = LaneTokenizer(session, sim.url, "sim-tiny")
        messages = [{"role": "user", "content": "Hello world"}]
        first = await tokenizer.tokenize(messages, None)
        assert await tokenizer.tokenize(messages, None) == first and tokenizer.calls == 1
        await tokenizer.tokenize(messages, {"reasoning_effort": "low"})
        assert tokenizer.calls == 2
        assert first.max_model_len == 8192
        wrong = LaneTokenizer(session, sim.url, "no-such-model")
        with pytest.raises(FaceoffError, match="/tokenize answered HTTP 404"):
            await wrong.tokenize(messages, None)
