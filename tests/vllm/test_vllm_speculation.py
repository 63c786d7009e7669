"""Real speculative decoding: vLLM's n-gram speculation on its CPU build, read by faceoff.

The engine drafts by prompt lookup (``--speculative-config '{"method": "ngram", …}'``):
a greedy answer to a repetitive prompt keeps finding its n-grams in the context and is
mostly accepted; a sampled answer to words in random order finds few. faceoff's own
collectors scrape the engine around each window; the acceptance computed from
``engine.jsonl``'s counter deltas must equal the engine's counters read by hand.
"""

from __future__ import annotations

import json
import random
import re
import time
import urllib.request
from pathlib import Path

import pytest

from collectors.cell_samplers import CellCollectors
from collectors.host import MemoryTarget
from collectors.settings import CollectorSettings
from collectors.speculation import spec_acceptance
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.bundle.lane_facts import SpecAcceptance
from tests.vllm.engine import SERVED, Serving, serving

pytestmark = pytest.mark.vllm

DRAFT_TOKENS = 3
NGRAM = json.dumps(
    {"method": "ngram", "num_speculative_tokens": DRAFT_TOKENS, "prompt_lookup_max": 4,
     "prompt_lookup_min": 2}
)  # fmt: skip
TOKENS = 128
SETTINGS = CollectorSettings(engine_period_s=0.5, memory_period_s=2.0, drain_timeout_s=10.0)
WORDS = ("the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by",
         "at", "from", "his", "her", "it", "an", "were", "are")  # fmt: skip
SPEC_LINE = re.compile(r"^vllm:spec_decode_(\w+)_total\{([^}]*)\} (\S+)$")
POSITION = re.compile(r'position="(\d+)"')


def complete(url: str, prompt: str, temperature: float) -> None:
    body = {"model": SERVED, "prompt": prompt, "max_tokens": TOKENS, "ignore_eos": True,
            "temperature": temperature}  # fmt: skip
    request = urllib.request.Request(
        f"{url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        assert json.load(answer)["usage"]["completion_tokens"] == TOKENS


def spec_counters(url: str) -> dict[str, float]:
    """The engine's spec_decode counters, read from its /metrics by hand."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=60) as answer:
        text = answer.read().decode()
    found = {}
    for line in text.splitlines():
        if m := SPEC_LINE.match(line):
            name, labels, value = m.groups()
            position = POSITION.search(labels)
            found[f"{name}[{position.group(1)}]" if position else name] = float(value)
    return found


def window(engine: Serving, folder: Path, prompt: str, temperature: float) -> SpecAcceptance:
    """One completion under faceoff's collectors; its acceptance from engine.jsonl."""
    collectors = CellCollectors(
        metrics_url=f"{engine.url}/metrics",
        target=MemoryTarget(pid=engine.pid),
        gpu_ids=[],
        folder=folder,
        settings=SETTINGS,
    )
    before = spec_counters(engine.url)
    collectors.start()
    start = time.perf_counter_ns()
    try:
        complete(engine.url, prompt, temperature)
        end = time.perf_counter_ns()
    finally:
        collectors.stop()
    after = spec_counters(engine.url)
    telemetry = collectors.summarize(CellWindow(start_ns=start, end_ns=end))
    found = spec_acceptance(telemetry.engine.counters)
    assert found is not None and found.exact, found
    by_hand = {key: after[key] - before.get(key, 0.0) for key in after}
    assert found.drafts == by_hand["num_drafts"]
    assert found.draft_tokens == by_hand["num_draft_tokens"]
    assert found.accepted_tokens == by_hand["num_accepted_tokens"]
    per_position = [by_hand[f"num_accepted_tokens_per_pos[{i}]"] for i in range(DRAFT_TOKENS)]
    if found.drafts:
        assert found.per_position == pytest.approx([a / found.drafts for a in per_position])
    return found


def test_real_ngram_acceptance_is_read_from_the_counters_and_follows_the_content(
    tiny_model: Path, tmp_path: Path
) -> None:
    rng = random.Random(7)
    shuffled = " ".join(rng.choice(WORDS) for _ in range(400))
    with serving(tiny_model, tmp_path / "engine.log", "--speculative-config", NGRAM) as engine:
        repetitive = window(engine, tmp_path / "repetitive", "alpha beta gamma delta " * 40, 0.0)
        varied = window(engine, tmp_path / "varied", shuffled, 1.0)

    assert repetitive.drafts > 0 and repetitive.draft_tokens <= DRAFT_TOKENS * repetitive.drafts
    assert repetitive.acceptance_rate is not None and repetitive.acceptance_rate > 0.5
    assert repetitive.mean_acceptance_length is not None
    assert repetitive.mean_acceptance_length > 2.0
    assert repetitive.per_position == sorted(repetitive.per_position, reverse=True)
    # accepted draft tokens per generated token: lookup finds little in random order
    assert varied.accepted_tokens / TOKENS < repetitive.accepted_tokens / TOKENS / 2
