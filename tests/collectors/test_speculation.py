"""Speculative-decoding acceptance from engine counter deltas: the counters as a real vLLM
0.32.0 (CPU build, n-gram speculation) exposes them, through faceoff's parser and deltas."""

from __future__ import annotations

import re

import pytest

from collectors.aliases import vllm_aliases
from collectors.deltas import engine_deltas
from collectors.prometheus import parse_metrics
from collectors.speculation import spec_acceptance
from faceoff.formats.attempt.telemetry import CounterDelta
from tests.collectors.builders import engine, window_ms
from tests.collectors.conftest import DATA

POS = 'spec_decode_num_accepted_tokens_per_pos{position="%d"}'


@pytest.fixture(scope="module")
def ngram_text() -> str:
    return (DATA / "vllm-0.32-ngram-spec-decode.txt").read_text()


def zeroed(text: str) -> str:
    """The same families before the first draft: every counter at 0."""
    return re.sub(r"(?m)^(vllm:spec_decode_\w+_total\{[^}]*\}) \S+$", r"\1 0.0", text)


def test_the_real_spec_decode_families_are_kept_per_position(ngram_text: str) -> None:
    metrics = parse_metrics(ngram_text, vllm_aliases())
    counters = metrics.counters
    assert counters["spec_decode_num_drafts"] == 29.0
    assert counters["spec_decode_num_draft_tokens"] == 87.0
    assert counters["spec_decode_num_accepted_tokens"] == 77.0
    assert [counters[POS % i] for i in range(3)] == [27.0, 26.0, 24.0]
    assert not any(name.startswith("spec_decode") for name in metrics.missing)


def test_a_scrape_without_speculation_reports_nothing_missing(vllm_text: str) -> None:
    metrics = parse_metrics(vllm_text, vllm_aliases())
    assert not any(name.startswith("spec_decode") for name in metrics.missing)
    assert not any(name.startswith("spec_decode") for name in metrics.counters)


def test_acceptance_over_a_cell_is_the_ratio_of_the_counter_deltas(ngram_text: str) -> None:
    table = vllm_aliases()
    before = parse_metrics(zeroed(ngram_text), table).counters
    after = parse_metrics(ngram_text, table).counters
    samples = [engine(0, counters=before), engine(10, counters=after, final=True)]
    deltas = engine_deltas(samples, window_ms(10, 4_000))
    found = spec_acceptance(deltas.counters)
    assert found is not None and found.exact
    assert (found.drafts, found.draft_tokens, found.accepted_tokens) == (29.0, 87.0, 77.0)
    assert found.acceptance_rate == pytest.approx(77 / 87)
    assert found.mean_acceptance_length == pytest.approx(1 + 77 / 29)
    assert found.per_position == pytest.approx([27 / 29, 26 / 29, 24 / 29])


def test_no_speculative_counters_means_no_acceptance() -> None:
    assert spec_acceptance({"generation_tokens": delta(100.0)}) is None


def test_a_cell_without_drafts_has_no_rates() -> None:
    counters = {
        "spec_decode_num_drafts": delta(0.0),
        "spec_decode_num_draft_tokens": delta(0.0),
        "spec_decode_num_accepted_tokens": delta(0.0),
        POS % 0: delta(0.0),
    }
    found = spec_acceptance(counters)
    assert found is not None
    assert (found.acceptance_rate, found.mean_acceptance_length, found.per_position) == (
        None,
        None,
        [],
    )


def test_an_inexact_delta_makes_the_acceptance_inexact() -> None:
    counters = {
        "spec_decode_num_drafts": delta(10.0),
        "spec_decode_num_draft_tokens": delta(30.0),
        "spec_decode_num_accepted_tokens": delta(12.0, why="counters reset during the cell"),
    }
    found = spec_acceptance(counters)
    assert found is not None and not found.exact
    assert found.why_inexact == "counters reset during the cell"
    assert found.acceptance_rate == pytest.approx(0.4)


def delta(value: float, why: str | None = None) -> CounterDelta:
    return CounterDelta(
        delta=value, baseline=0.0, final=value, resets=0, exact=why is None, why_inexact=why
    )
