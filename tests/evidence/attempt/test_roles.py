"""Statistics role by role, the length-finish rule, and the head-of-line answers, from journal
lines the client's own parser builds out of timed SSE reads."""

from __future__ import annotations

from evidence.attempt.roles import by_role, counted, length_limited
from evidence.attempt.summary import metric_stats
from evidence.comparison.probe_answers import behind_long, decode_stalls
from faceoff.formats.attempt.journal import RequestOutcome, RequestRole, Status
from tests.workload.builders import DONE, chunk, planned, replay, usage_chunk


def answered(
    role: RequestRole, send_ms: int, chunks_ms: list[int], *, finish: str = "stop", index: int = 0
) -> RequestOutcome:
    """A request sent at ``send_ms`` whose content chunks arrive at ``chunks_ms``."""
    reads = [(at, chunk(content=" w")) for at in chunks_ms[:-1]]
    reads.append((chunks_ms[-1], chunk(content=" w", finish_reason=finish)))
    reads += [(chunks_ms[-1], usage_chunk(100, len(chunks_ms))), (chunks_ms[-1], DONE)]
    return replay(reads, planned(role=role, index=index), send_ms=send_ms)


def test_a_request_stopped_at_max_tokens_is_counted_and_kept_out_unless_included() -> None:
    ok = answered(RequestRole.SINGLE, 0, [100, 110, 120])
    cut = answered(RequestRole.SINGLE, 0, [400, 410, 420], finish="length", index=1)
    assert (ok.status, cut.status) == (Status.OK, Status.LENGTH_LIMIT)
    lines = [ok, cut]
    assert length_limited(lines) == 1
    assert counted(lines, "exclude") == [ok]
    assert counted(lines, "include") == [ok, cut]
    ttft = {rule: metric_stats(counted(lines, rule))["ttft_s"] for rule in ("exclude", "include")}
    assert (ttft["exclude"].n, ttft["exclude"].max) == (1, 0.1)
    assert (ttft["include"].n, ttft["include"].max) == (2, 0.4)


def test_each_role_has_its_own_distribution_and_one_role_has_none() -> None:
    long = answered(RequestRole.LONG_PREFILL, 0, [2000, 2010])
    shorts = [answered(RequestRole.SHORT, 10, [60 + i, 70 + i], index=i + 1) for i in range(3)]
    groups = by_role([long, *shorts])
    assert list(groups) == [RequestRole.LONG_PREFILL, RequestRole.SHORT]
    assert metric_stats(groups[RequestRole.SHORT])["ttft_s"].p50 == 0.051
    assert metric_stats(groups[RequestRole.LONG_PREFILL])["ttft_s"].p50 == 2.0
    assert by_role(shorts) == {}  # a cell of one role: the pooled statistics say it all


def test_the_decode_stall_is_the_longest_gap_of_a_decoder_across_the_long_prefill() -> None:
    # stream 1 decodes from 0 ms; the long prefill is sent at 250 ms and first outputs at
    # 900 ms; a short sent at 300 ms queues behind it.
    decoder = answered(RequestRole.SHORT, 0, [50, 100, 150, 200, 260, 780, 800], index=1)
    long = answered(RequestRole.LONG_PREFILL, 250, [900, 950])
    queued = answered(RequestRole.SHORT, 300, [910, 920], index=2)
    lines = [long, decoder, queued]
    assert decode_stalls(lines) == [0.52]  # 260 → 780 ms overlaps 250..900 ms
    assert [o.index for o in behind_long(lines)] == [0, 2]
