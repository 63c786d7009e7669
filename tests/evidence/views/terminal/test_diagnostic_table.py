"""The paired diagnostic table: a row per arm, incumbent first, candidate times as ratios to
the incumbent's, and what the prompt-token vectors and errors say. Pure."""

from __future__ import annotations

from typing import Any

from evidence.attempt.diagnostics import NOT_RUN
from evidence.views.terminal.diagnostic_table import paired_lines
from faceoff.formats.diagnostic import Diagnostic, Seen

SEEN = Seen(lane_run="lanes/x/campaign-001", lane_usable=True, lane_reason=None,
            warmups_failed=None, setup_error=None)  # fmt: skip


def diagnostic(arm: str, **fields: Any) -> Diagnostic:
    base: dict[str, Any] = {
        "cell_id": "natural-600-c1", "arm": arm, "run": 1, "seen": SEEN, "status": "ok",
        "error": None, "finish_reason": "stop", "prompt_sha256": "a" * 64,
        "reasoning_effort": None, "input_tokens": 600, "output_tokens": 48, "ttft_s": 0.040,
        "e2e_s": 0.400, "tpot_s": 0.0075, "chunk_offsets_ms": [40.0, 50.0, 80.0],
        "max_gap_ms": 30.0, "scrapes": ["ok", "ok"], "engine_deltas": {"prefix_cache_hits": 0},
    }  # fmt: skip
    return Diagnostic.model_validate(base | fields)


def test_candidate_times_read_against_the_incumbent_and_equal_vectors_are_said() -> None:
    found = [diagnostic("cand", ttft_s=0.060, e2e_s=0.200), diagnostic("inc")]
    lines = paired_lines("natural-600-c1", found, incumbent="inc")
    assert lines[0].startswith("diagnostic of natural-600-c1: one request per arm")
    assert lines[1].split() == ["arm", "run", "status", "in", "tok", "out", "tok", "TTFT", "ms",
                                "E2E", "ms", "TPOT", "ms", "chunks", "max", "gap", "ms",
                                "prefix", "hits", "effort"]  # fmt: skip
    assert lines[2].split()[:6] == ["inc", "1", "ok", "600", "48", "40.0"]
    assert "60.0 (1.50×)" in lines[3] and "200.0 (0.50×)" in lines[3]
    assert "prompt-token vectors: equal on every arm (the same tokens prefilled)" in lines
    assert lines[-1] == "files: diagnostics/natural-600-c1/<arm>/run-<n>/ in the bundle"


def test_a_lane_that_could_not_serve_and_a_rendered_effort_are_named() -> None:
    down = SEEN.model_copy(update={"lane_usable": False, "lane_reason": "never ready"})
    found = [
        diagnostic("inc", reasoning_effort="low"),
        diagnostic("cand", reasoning_effort="max", prompt_sha256="b" * 64),
        diagnostic("cold", seen=down, status=NOT_RUN, error="never ready", ttft_s=None,
                   e2e_s=None, tpot_s=None, prompt_sha256=None, output_tokens=None),
    ]  # fmt: skip
    lines = paired_lines("natural-600-c1", found, incumbent="inc")
    assert lines[4].split()[:6] == ["cold", "1", "not_run", "600", "—", "—"]
    assert "cold: not run: never ready" in lines
    assert (
        "prompt-token vectors: differ between arms (the arms' reasoning efforts differ by design)"
        in lines
    )
