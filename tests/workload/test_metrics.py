"""Metric definitions on hand-built event sequences fed through the client's parser."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from faceoff.formats.attempt.journal import Phase, RequestOutcome, Status
from tests.workload.builders import (
    DONE,
    MS,
    chunk,
    failed,
    planned,
    replay,
    sse,
    usage_chunk,
)
from workload import metrics
from workload.stream import StreamProtocolError, StreamState

ROLE = chunk("", delta={"role": "assistant"})


def test_role_only_first_chunk_is_not_output() -> None:
    r = replay(
        [
            (5, ROLE),
            (40, chunk("Hello")),
            (50, chunk(" world")),
            (60, chunk(" again", finish_reason="stop")),
            (61, usage_chunk(100, 3)),
            (61, DONE),
        ]
    )
    assert r.status is Status.OK
    assert metrics.ttfo(r).value == pytest.approx(0.040)
    assert metrics.ttft(r).value == pytest.approx(0.040)
    assert metrics.e2e(r).value == pytest.approx(0.060)
    assert metrics.effective_prefill(r).value == pytest.approx(100 / 0.040)
    assert metrics.decode(r).value == pytest.approx(2 / 0.020)
    assert metrics.tpot(r).value == pytest.approx(0.010)
    assert r.chunk_offsets_us == [40_000, 50_000, 60_000]
    assert r.output_words == 3


def test_empty_deltas_are_ignored_everywhere() -> None:
    r = replay(
        [
            (5, ROLE),
            (10, chunk("")),
            (12, chunk(None)),
            (30, chunk("a")),
            (35, chunk("")),
            (40, chunk("b", finish_reason="stop")),
            (45, chunk("", finish_reason=None)),
            (46, usage_chunk(10, 2)),
            (46, DONE),
        ]
    )
    assert metrics.ttfo(r).value == pytest.approx(0.030)
    assert metrics.e2e(r).value == pytest.approx(0.040)
    assert r.events == 9
    assert r.chunk_kinds == "cc"


def test_reasoning_only_output_has_ttfo_but_no_ttft() -> None:
    r = replay(
        [
            (5, ROLE),
            (20, chunk(reasoning="think")),
            (30, chunk(reasoning=" more", finish_reason="length")),
            (31, usage_chunk(50, 2, reasoning=2)),
            (31, DONE),
        ]
    )
    assert r.status is Status.LENGTH_LIMIT
    assert metrics.ttfo(r).value == pytest.approx(0.020)
    ttft = metrics.ttft(r)
    assert ttft.value is None
    assert ttft.reason == "no visible content chunk was received"
    assert metrics.decode(r).value == pytest.approx(1 / 0.010)
    assert r.usage is not None and r.usage.reasoning_tokens == 2
    assert (r.chunk_kinds, r.output_chars, r.reasoning_chars) == ("rr", 0, 10)


def test_reasoning_then_content_separates_ttfo_and_ttft() -> None:
    r = replay(
        [
            (10, chunk(delta={"reasoning_content": "hm"})),
            (25, chunk("Yes", finish_reason="stop")),
            (26, usage_chunk(10, 2)),
            (26, DONE),
        ]
    )
    assert metrics.ttfo(r).value == pytest.approx(0.010)
    assert metrics.ttft(r).value == pytest.approx(0.025)
    assert r.chunk_kinds == "rc"


def test_both_reasoning_fields_in_one_delta_count_once() -> None:
    r = replay(
        [
            (10, chunk(delta={"reasoning": "abc", "reasoning_content": "abc"})),
            (20, chunk("x", finish_reason="stop")),
            (20, usage_chunk(1, 2)),
            (20, DONE),
        ]
    )
    assert r.reasoning_chars == 3


@pytest.mark.parametrize("metric", [metrics.decode, metrics.tpot])
def test_one_token_output_has_no_decode_interval(
    metric: Callable[[RequestOutcome], metrics.Measured],
) -> None:
    r = replay(
        [
            (5, ROLE),
            (30, chunk("ready", finish_reason="length")),
            (31, usage_chunk(9, 1)),
            (31, DONE),
        ],
        request=planned(max_tokens=1, expect_length_finish=True),
    )
    assert r.status is Status.OK  # a max_tokens=1 probe asked for its length finish
    result = metric(r)
    assert result.value is None
    assert result.reason == "1 completion token(s): no interval between tokens"
    assert metrics.effective_prefill(r).value == pytest.approx(9 / 0.030)


def test_all_output_in_one_chunk_is_undefined_not_infinite() -> None:
    r = replay([(30, chunk("a b c", finish_reason="stop") + usage_chunk(5, 3) + DONE)])
    assert metrics.decode(r).reason == "all output arrived in one chunk"
    assert metrics.tpot(r).value is None


def test_usage_chunk_after_last_token_does_not_move_the_end() -> None:
    r = replay(
        [
            (10, chunk("a")),
            (20, chunk("b", finish_reason="stop")),
            (90, usage_chunk(5, 2)),
            (95, DONE),
        ]
    )
    assert r.last_token_ns == 20 * MS
    assert metrics.e2e(r).value == pytest.approx(0.020)
    assert (r.first_event_ns, r.usage_ns, r.done_ns, r.end_ns) == (
        10 * MS,
        90 * MS,
        95 * MS,
        95 * MS,
    )


def test_events_in_one_read_share_its_arrival_time() -> None:
    r = replay([(10, chunk("a") + chunk("b")), (20, chunk("c", finish_reason="stop") + DONE)])
    assert r.chunk_offsets_us == [10_000, 10_000, 20_000]


def test_event_split_across_reads_and_crlf_framing() -> None:
    whole = chunk("hello").replace(b"\n", b"\r\n")
    r = replay(
        [
            (10, whole[:17]),
            (15, whole[17:]),
            (20, chunk("!", finish_reason="stop") + DONE),
        ]
    )
    assert r.chunk_offsets_us == [15_000, 20_000]
    assert r.output_excerpt == "hello!"


def test_error_event_mid_stream_is_a_stream_error() -> None:
    error = sse({"error": {"object": "error", "message": "engine died", "code": 500}})
    r = replay([(10, chunk("a")), (20, error), (21, DONE)])
    assert r.status is Status.STREAM_ERROR
    assert r.error == "error event: engine died"
    assert metrics.ttfo(r).value == pytest.approx(0.010)
    assert metrics.decode(r).reason == "the server reported no usage"


def test_stream_cut_before_done_is_a_stream_error() -> None:
    r = replay([(10, chunk("a")), (20, chunk("b"))])
    assert r.status is Status.STREAM_ERROR
    assert r.error == "stream ended before data: [DONE]"


def test_a_stream_without_a_finish_reason_is_ok_when_it_ends_with_usage_and_done() -> None:
    r = replay([(10, chunk("a")), (20, chunk("b")), (21, usage_chunk(5, 2) + DONE)])
    assert (r.status, r.finish_reason, r.error) == (Status.OK, None, None)


def test_a_stream_without_a_finish_reason_or_usage_is_a_stream_error() -> None:
    r = replay([(10, chunk("a")), (20, chunk("b")), (21, DONE)])
    assert r.status is Status.STREAM_ERROR
    assert r.error == "stream ended without a finish_reason or usage"
    cut = replay([(10, chunk("a")), (21, usage_chunk(5, 1))])
    assert cut.status is Status.STREAM_ERROR
    assert cut.error == "stream ended before data: [DONE]"


def test_unexpected_length_finish_is_a_length_limit() -> None:
    r = replay([(10, chunk("a")), (20, chunk("b", finish_reason="length")), (21, DONE)])
    assert r.status is Status.LENGTH_LIMIT


def test_refusal_delta_is_flagged() -> None:
    r = replay([(10, chunk(delta={"refusal": "I can't"}, finish_reason="stop")), (11, DONE)])
    assert r.refusal
    assert metrics.ttfo(r).value is None


def test_never_sent_request_has_no_metrics() -> None:
    r = failed(Status.CANCELLED)
    r = r.model_copy(update={"send_ns": None, "due_ns": None})
    for name, value in metrics.request_metrics(r).items():
        assert value.value is None, name
        assert value.reason == "the request was never sent"


def test_a_line_keeps_its_metrics_and_a_copy_measures_its_own() -> None:
    r = replay([(10, chunk("a")), (30, chunk("b", finish_reason="stop")), (31, DONE)])
    assert metrics.metric_of(r, "ttft_s") == metrics.ttft(r)
    assert metrics.measures_of(r) is metrics.measures_of(r)  # made once
    later = r.model_copy(update={"first_content_ns": r.first_content_ns + 5_000_000})
    assert metrics.metric_of(later, "ttft_s").value == pytest.approx(metrics.ttft(r).value + 0.005)
    timing = metrics.Timing.of(r)  # a line's bare timings are measured on each ask
    assert metrics.metric_of(timing, "e2e_s") == metrics.e2e(r)


def test_schedule_delay_is_send_minus_due() -> None:
    r = replay([(10, chunk("a", finish_reason="stop")), (10, DONE)], send_ms=3)
    assert metrics.schedule_delay(r).value == pytest.approx(0.003)


def test_aggregate_throughput_counts_scored_requests_with_usage() -> None:
    a = replay(
        [
            (10, chunk("a")),
            (100, chunk("b", finish_reason="stop")),
            (100, usage_chunk(5, 40)),
            (110, DONE),
        ]
    )
    b = replay(
        [
            (60, chunk("a")),
            (200, chunk("b", finish_reason="stop")),
            (200, usage_chunk(5, 60)),
            (210, DONE),
        ],
        send_ms=50,
    )
    warm = a.model_copy(update={"phase": Phase.WARMUP, "end_ns": 10_000 * MS})
    broken = failed(Status.HTTP_ERROR).model_copy(update={"end_ns": 9_000 * MS})
    result = metrics.aggregate_output_throughput([a, b, warm, broken])
    assert result.value == pytest.approx(100 / 0.210)


def test_aggregate_throughput_without_usage_is_undefined() -> None:
    result = metrics.aggregate_output_throughput([failed(Status.STREAM_ERROR)])
    assert result == metrics.Measured(None, "no scored request reported usage")


def test_definitions_name_every_request_metric() -> None:
    for term in ("TTFO", "TTFT", "Effective prefill", "Decode", "TPOT", "E2E", "schedule delay"):
        assert term in metrics.DEFINITIONS


def test_cell_window_spans_the_scored_requests_that_were_sent() -> None:
    a = replay([(10, chunk("a", finish_reason="stop")), (40, DONE)], send_ms=2)
    b = replay([(60, chunk("a", finish_reason="stop")), (90, DONE)], send_ms=20)
    warm = b.model_copy(update={"phase": Phase.WARMUP, "send_ns": 0, "end_ns": 500 * MS})
    unsent = failed(Status.CANCELLED).model_copy(update={"send_ns": None, "end_ns": 900 * MS})
    assert metrics.cell_window([a, b, warm, unsent]) == (2 * MS, 90 * MS)
    assert metrics.cell_window([warm, unsent]) is None


def test_an_event_that_is_not_a_json_object_is_a_protocol_error() -> None:
    with pytest.raises(StreamProtocolError, match="event is not JSON"):
        StreamState().observe(b'{"choices": [', 0)
    with pytest.raises(StreamProtocolError, match="event is not a JSON object"):
        StreamState().observe(b'"text"', 0)
