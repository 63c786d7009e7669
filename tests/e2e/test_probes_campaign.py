"""The shipped probes example, run for real: every probe kind answers its question on the card.

Two simulator lanes (the demo's calibrated profiles) run one cell of each probe kind
under the Prefect test harness; the first cell is a head_of_line, which the arms'
(odd count of) warmups are shaped like. Each answer line of the card is then checked
against figures this test computes itself from the bundle's native journals. An
lm-evaluation-harness result per arm, the candidate outside its band, is imported too.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff import format as fmt
from faceoff.formats.attempt.journal import Phase, RequestOutcome, Status
from flows.prefect.flow_runner import run_campaign
from tests.conftest import free_port
from tests.e2e.matrices import loaded_host_toml
from workload.journal import read_journal

pytestmark = pytest.mark.prefect

EXAMPLE = Path(__file__).resolve().parents[2] / "matrix/examples/sim-probes.toml"
# The shared test hosts stall; the host_stall rule has its own tests (tests/guards).
LOADED_HOST = loaded_host_toml()
INCUMBENT, CANDIDATE = "exl3-r11", "nvfp4-r2"
HELLASWAG = "results/hellaswag/acc_norm,none"
NS = 1e9


def quality_import(folder: Path) -> str:
    """An lm-evaluation-harness result per arm, the candidate 2 points behind (band: 1)."""
    files = {}
    for arm, acc in ((INCUMBENT, 0.801), (CANDIDATE, 0.781)):
        files[arm] = folder / f"hellaswag-{arm}.json"
        files[arm].write_text(json.dumps({"results": {"hellaswag": {"acc_norm,none": acc}}}))
    return f"""
[[quality]]
name = "hellaswag"
evaluator = "lm_eval"
results = {{ "{INCUMBENT}" = "{files[INCUMBENT]}", "{CANDIDATE}" = "{files[CANDIDATE]}" }}
[[quality.bands]]
metric = "{HELLASWAG}"
tolerance = 0.01
"""


def probes_matrix(folder: Path) -> Path:
    text = re.sub(r"port = 1811\d", lambda _: f"port = {free_port()}", EXAMPLE.read_text())
    path = folder / "sim-probes.toml"
    path.write_text(text + LOADED_HOST + quality_import(folder))
    return path


def scored(bundle: Path, cell: str, arm: str) -> list[RequestOutcome]:
    attempts = sorted((bundle / "cells" / cell / arm).glob("attempt-*"))
    lines = read_journal(attempts[-1] / "journal.jsonl").outcomes
    return [o for o in lines if o.phase is Phase.SCORED and o.status is Status.OK]


def ttft(o: RequestOutcome) -> float | None:
    return None if o.first_content_ns is None or o.send_ns is None else (
        (o.first_content_ns - o.send_ns) / NS
    )  # fmt: skip


def prefill(o: RequestOutcome) -> float | None:
    if o.first_output_ns is None or o.send_ns is None or o.usage is None:
        return None
    return o.usage.prompt_tokens / ((o.first_output_ns - o.send_ns) / NS)


def decode(o: RequestOutcome) -> float | None:
    if o.usage is None or o.usage.completion_tokens < 2 or o.first_output_ns is None:
        return None
    if o.last_token_ns is None or o.last_token_ns <= o.first_output_ns:
        return None
    return (o.usage.completion_tokens - 1) / ((o.last_token_ns - o.first_output_ns) / NS)


def median_of(value: Callable[[RequestOutcome], float | None], role: str | None = None):
    def figure(requests: list[RequestOutcome]) -> float | None:
        found = [v for o in requests if role in (None, o.role.value) if (v := value(o)) is not None]
        return statistics.median(found) if found else None

    return figure


def aggregate_prefill(requests: list[RequestOutcome]) -> float | None:
    tokens = sum(o.usage.prompt_tokens for o in requests if o.usage)
    span = max(o.first_output_ns or 0 for o in requests) - min(o.send_ns or 0 for o in requests)
    return tokens / (span / NS)


def recall(requests: list[RequestOutcome]) -> float | None:
    return sum(bool(o.marker_found) for o in requests) / len(requests)


def verified_length(bundle: Path, cell: str, arm: str) -> int | None:
    """The longest probe input the lane counted whose marker came back verbatim."""
    attempts = sorted((bundle / "cells" / cell / arm).glob("attempt-*"))
    lines = read_journal(attempts[-1] / "journal.jsonl").outcomes
    assert lines and all(o.phase is Phase.PROBE for o in lines)
    found = [o.input_tokens for o in lines if o.status is Status.OK and o.marker_found]
    return max(found, default=None)


def long_prefill(requests: list[RequestOutcome]) -> RequestOutcome:
    long = next(o for o in requests if o.role.value == "long_prefill")
    assert long.send_ns is not None and long.first_output_ns is not None
    return long


def short_ttft_behind(requests: list[RequestOutcome]) -> float | None:
    sent = long_prefill(requests).send_ns or 0
    behind = [t for o in requests if o.role.value == "short" and (o.send_ns or 0) >= sent
              if (t := ttft(o)) is not None]  # fmt: skip
    return statistics.median(behind) if behind else None


def longest_stall(requests: list[RequestOutcome]) -> float | None:
    long = long_prefill(requests)
    assert long.send_ns is not None and long.first_output_ns is not None
    gaps = []
    decoding = (o for o in requests if o.role.value == "short" and o.send_ns is not None
                and o.send_ns < long.send_ns)  # fmt: skip
    for o in decoding:
        times = [o.send_ns + us * 1000 for us in o.chunk_offsets_us]
        gaps += [(b - a) / NS for a, b in itertools.pairwise(times)
                 if a < long.first_output_ns and b > long.send_ns]  # fmt: skip
    return max(gaps) if gaps else None


# question -> (cell, statistic over the cell's scored ok requests, how the card writes it)
EXPECTED: dict[str, tuple[str, Callable[[list[RequestOutcome]], float | None], str]] = {
    "short_ttft": ("head-of-line-65536-c3", short_ttft_behind, "s"),
    "decode_stall": ("head-of-line-65536-c3", longest_stall, "s"),
    "turn2_ttft": ("session-reuse-16384-c1", median_of(ttft, "turn_2"), "s"),
    "effective_prefill": ("prefill-probe-16384-c1", median_of(prefill), "tok/s"),
    "aggregate_prefill": ("prefill-probe-16384-c3", aggregate_prefill, "tok/s"),
    "decode": ("decode-structured-2048-c1", median_of(decode), "tok/s"),
    "needle_recall": ("needle-16384-c1", recall, "share"),
    **{
        f"agentic_turn{k}_ttft": ("agentic-4096-c1", median_of(ttft, f"turn_{k}"), "s")
        for k in range(1, 5)
    },
}
SEARCH = "needle-search-131072-c1"


def written(unit: str, value: float | None) -> str:
    if unit == "s":
        return fmt.seconds(value)
    if unit == "share":
        return fmt.percent(value)
    if unit == "tokens":
        return f"{fmt.count(value)} tokens"
    return f"{fmt.rate(value)} tok/s"


def test_every_probe_cell_answers_its_question_on_the_card(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    result = run_campaign(probes_matrix(tmp_path), workdir)

    assert result.restored, result.closure.sentence
    audit = audit_bundle(result.bundle)  # every answer, band and posture recomputes
    assert audit.ok, audit.findings
    assert result.closure.sentence.startswith("complete: 20 accepted"), result.closure.sentence
    comparison = json.loads((result.bundle / "comparison.json").read_text())
    section = result.card.split("## What each probe answers", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    asked = {a["question"] for cell in comparison["cells"] for a in cell["answers"]}
    assert set(EXPECTED) | {"prefix_hit_ratio", "needle_search"} <= asked
    for question, (cell, figure, unit) in EXPECTED.items():
        inc = figure(scored(result.bundle, cell, INCUMBENT))
        cand = figure(scored(result.bundle, cell, CANDIDATE))
        line = next(x for x in lines if x.startswith(f"- {cell} ") and _label(comparison, cell,
                    question) in x)  # fmt: skip
        assert f"{INCUMBENT} {written(unit, inc)}, {CANDIDATE} {written(unit, cand)}" in line
        if inc and cand is not None:
            assert f"ratio {cand / inc:.2f}×" in line, line
    # The needle search: each arm's longest verified length, one line (the candidate's
    # profile recalls up to 98,276 tokens, the incumbent's beyond the search's high end).
    inc, cand = (verified_length(result.bundle, SEARCH, a) for a in (INCUMBENT, CANDIDATE))
    assert inc is not None and cand is not None and cand <= 98_276 < inc, (inc, cand)
    searched = _line(lines, SEARCH, "longest verified needle retrieval")
    assert (
        f"{INCUMBENT} {written('tokens', inc)}, {CANDIDATE} {written('tokens', cand)}; "
        f"ratio {cand / inc:.2f}×" in searched
    ), searched
    # Over requests, the ratio carries its interval; a cell's one figure says it has none.
    returning = _line(lines, "session-return-16384-c1", "returning after another session")
    inc, cand = (median_of(ttft, "turn_2")(scored(result.bundle, "session-return-16384-c1", a))
                 for a in (INCUMBENT, CANDIDATE))  # fmt: skip
    assert f"{INCUMBENT} {fmt.seconds(inc)}, {CANDIDATE} {fmt.seconds(cand)}" in returning
    assert "interval" in _line(lines, "head-of-line-65536-c3", "short-request TTFT")
    stall = _line(lines, "head-of-line-65536-c3", "longest decode stall")
    assert "interval" in stall and "no ratio" not in stall, stall  # stream 1 was decoding
    assert "no interval" in _line(lines, "prefill-probe-16384-c3", "aggregate prefill")
    hits = _line(lines, "session-reuse-16384-c1", "prefix-cache hit ratio")
    assert "—" not in hits.split(":", 2)[2].split(";")[0], hits  # both arms report hits/queries
    for arm in (INCUMBENT, CANDIDATE):  # cold start: first warmup after the start vs the rest
        first, warm = cold_start(result.bundle, arm)
        assert (
            f"- {arm}: first request after the start (JIT) TTFT {fmt.seconds(first)}, warm "
            f"median {fmt.seconds(warm)} over 2 later warmup(s)"
        ) in section
    # The host's posture was read when the campaign opened and when it closed.
    posture = result.card.split("## Host posture", 1)[1].split("\n## ", 1)[0]
    assert "| swappiness |" in posture
    assert all((result.bundle / "posture" / f).is_file() for f in ("start.json", "end.json"))
    manifest = json.loads((result.bundle / "MANIFEST.json").read_text())
    assert manifest["posture"]["start"]["swappiness"] == manifest["posture"]["end"]["swappiness"]
    # A quality import outside its band: not promotable, whatever the speed, metric named.
    assert f"**{CANDIDATE}: not promotable** — outside its band on {HELLASWAG}." in result.card
    assert (result.bundle / "quality" / "hellaswag" / f"{CANDIDATE}.json").is_file()
    streams = section.split("Per-stream time to first output (the probe's one token), "
                            "prefill-probe-16384-c3", 1)[1]  # fmt: skip
    for arm in (INCUMBENT, CANDIDATE):
        row = next(x for x in streams.splitlines() if x.startswith(f"| {arm} |"))
        assert "—" not in row, row


def cold_start(bundle: Path, arm: str) -> tuple[float, float]:
    run = sorted((bundle / "lanes" / arm).glob("campaign-*"))[0]
    lines = read_journal(run / "warmup" / "journal.jsonl").outcomes
    timed = sorted((o.send_ns or 0, t) for o in lines if (t := ttft(o)) is not None)
    return timed[0][1], statistics.median(t for _, t in timed[1:])


def _label(comparison: dict, cell: str, question: str) -> str:
    entry = next(c for c in comparison["cells"] if c["id"] == cell)
    return next(a["label"] for a in entry["answers"] if a["question"] == question)


def _line(lines: list[str], cell: str, label: str) -> str:
    return next(x for x in lines if x.startswith(f"- {cell} ") and label in x)
