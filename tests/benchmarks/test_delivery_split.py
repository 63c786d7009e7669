"""The admission/delivery split and the spin reader's output, as pure functions."""

from __future__ import annotations

import json

from benchmarks.delivery_split import LIMIT, Split, delivery_lines
from benchmarks.peer_clients import SPIN, Seen
from benchmarks.spin_reader import answers, seen_of

MS = 1_000_000


def test_the_error_splits_into_the_servers_queueing_and_the_clients_lateness() -> None:
    truth = {"arrival_ns": 100 * MS, "chunks_ns": [150 * MS, 160 * MS]}
    split = Split()
    split.add(Seen(1, ttft_s=0.0505, last_s=0.0612, chunk_s=[], send_ns=99 * MS), truth)
    split.add(Seen(2, ttft_s=0.05, last_s=0.06, chunk_s=[]), truth)  # no absolute stamps
    assert split.admission_ms == [1.0]
    assert [round(x, 6) for x in (*split.first_ms, *split.last_ms)] == [-0.5, 0.2]


def splits_of(first_ms: float, last_ms: float) -> Split:
    return Split([0.01] * 200, [first_ms] * 200, [last_ms] * 200)


def test_faceoffs_delivery_is_held_to_twice_the_spin_readers() -> None:
    splits = {"faceoff": splits_of(0.05, 0.30), LIMIT: splits_of(0.04, 0.10)}
    [line] = delivery_lines("pinned", 32, splits, gap_ms=5.0)
    assert "first 0.050 vs 0.040 = 1.25× (met)" in line
    assert "last 0.300 vs 0.100 = 3.00× (MISSED)" in line
    assert line.endswith("first tokens > ½ gap late: 0 of 200")
    late = {"faceoff": splits_of(4.99, 0.1), LIMIT: splits_of(0.04, 0.1)}
    assert delivery_lines("pinned", 32, late, gap_ms=5.0)[0].endswith("200 of 200")
    assert delivery_lines("pinned", 32, {"faceoff": splits_of(0.05, 0.3)}, gap_ms=5.0) == []


def test_each_receive_mode_of_faceoff_is_held_to_the_spin_reader() -> None:
    """The sleeping client and the spinning one, each its own line in the same round."""
    splits = {"faceoff": splits_of(4.99, 0.1), SPIN: splits_of(0.05, 0.1)}
    sleeping, spinning = delivery_lines("pinned", 1, splits | {LIMIT: splits_of(0.04, 0.1)}, 5.0)
    assert sleeping.startswith("pinned C1 delivery p99 ms, faceoff vs")
    assert "(MISSED)" in sleeping and sleeping.endswith("200 of 200")
    assert spinning.startswith(f"pinned C1 delivery p99 ms, {SPIN} vs")
    assert "(MISSED)" not in spinning and spinning.endswith("0 of 200")


def event(text: str) -> bytes:
    payload = json.dumps({"id": "cmpl-truth-7", "choices": [{"index": 0, "text": text}]})
    data = f"data: {payload}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_each_content_chunk_is_dated_by_the_read_that_ended_its_event() -> None:
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    first, second = head + event("s7"), event(" tok")
    raw = first + second + event("") + b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
    reads = [(1_000, len(first) - 5), (2_000, len(first)), (3_000, len(raw))]
    lines = [f"0 500 {len(raw)} 3".encode(), *(f"{ns} {end}".encode() for ns, end in reads)]
    [(send_ns, got, answer)] = answers(b"\n".join(lines) + b"\n" + raw + b"\n")
    assert (send_ns, got, answer) == (500, reads, raw)
    seen = seen_of(send_ns, got, answer)
    assert seen is not None and seen.serial == 7 and seen.send_ns == 500
    assert seen.chunk_s == [1.5e-6, 2.5e-6]  # the second read ended the first event
