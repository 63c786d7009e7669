"""The fidelity bench's targets and its CPU A/B line, as pure functions of the errors."""

from __future__ import annotations

from benchmarks.fidelity_peers import Errors, cpu_line, cpu_pairs, headline
from benchmarks.peer_clients import BEFORE


def errors_of(ttft_ms: float, last_ms: float) -> Errors:
    """200 requests whose TTFT and last-token errors are all the given values."""
    return Errors(ttft_ms=[ttft_ms] * 200, last_ms=[last_ms] * 200, chunk_ms=[last_ms] * 200)


def targets(errors: dict[str, Errors]) -> str:
    return headline("pinned", 32, errors)[1]


def test_the_last_token_is_held_to_twice_the_ttft_or_one_ms_the_larger() -> None:
    peer = errors_of(12.0, 14.0)
    # kernel stamps: a TTFT p99 of 10 µs, the last token's 50 µs: nothing a client does
    tiny = targets({"faceoff": errors_of(0.01, 0.05), "vllm bench": peer})
    assert "last ≤ max(2×TTFT, 1 ms) met (0.05 vs 1.00)" in tiny
    # the finish bookkeeping of a C32 wave on the loop: 4.41 ms against a 0.39 ms TTFT
    slow = targets({"faceoff": errors_of(0.39, 4.41), "vllm bench": peer})
    assert "last ≤ max(2×TTFT, 1 ms) MISSED (4.41 vs 1.00)" in slow
    wide = targets({"faceoff": errors_of(2.0, 3.9), "vllm bench": peer})
    assert "last ≤ max(2×TTFT, 1 ms) met (3.90 vs 4.00)" in wide


def test_the_earlier_tree_is_no_peer_and_its_cpu_is_paired_round_by_round() -> None:
    ours, before = errors_of(0.01, 0.05), errors_of(0.02, 0.04)
    ours.cpu_s, before.cpu_s = [0.0030, 0.0036], [0.0033, 0.0036]
    shown = headline("pinned", 32, {"faceoff": ours, BEFORE: before})[0]
    assert "(no peer)" in shown and BEFORE not in shown
    pairs = cpu_pairs({"faceoff": ours, BEFORE: before})
    assert pairs == [(0.0030, 0.0033), (0.0036, 0.0036)]
    line = cpu_line("pinned C32", pairs)
    assert "median 3.300 vs 3.450 (0.957×)" in line and "1 of 2 rounds lower" in line
    assert cpu_pairs({"faceoff": ours}) == []
