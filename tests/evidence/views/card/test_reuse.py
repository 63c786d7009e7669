"""The card's prefix-reuse line for each way a cell's figures come: a trace with both arms
measured, an engine that looked nothing up (vLLM without prefix caching), counters that are
missing, a dataset without a planned figure."""

from __future__ import annotations

from evidence.views.card.markdown import Sources
from evidence.views.card.reuse import line
from faceoff.formats.bundle.prefix_reuse import ArmHits, PrefixReuse


def reuse(source: str, expected: float | None, *arms: ArmHits) -> PrefixReuse:
    tokens = (36_027, 71_118) if expected is not None else (None, None)
    return PrefixReuse.model_validate(
        {"source": source, "expected": expected, "hit_tokens": tokens[0],
         "input_tokens": tokens[1], "arms": arms, "sources": ["cells/replay/a/attempt-1/x"]}
    )  # fmt: skip


def test_a_trace_line_puts_the_plan_beside_each_arm() -> None:
    sources = Sources()
    said = line(
        "replay",
        reuse("trace", 0.5066,
              ArmHits(arm="cached", ratio=0.504, hits=35_840, queries=71_117),
              ArmHits(arm="uncached", ratio=None, hits=0, queries=0),
              ArmHits(arm="remote", ratio=None, hits=None, queries=None)),
        sources,
    )  # fmt: skip
    assert said == (
        "- **replay** (trace): planned 50.7% offline (36,027 of 71,118 prompt tokens); "
        "prefix-cache hit ratio cached 50.4% (35,840 of 71,117 tokens hit), uncached none "
        "(0 tokens queried) and remote not measured (no exact prefix-cache counters) [1]."
    )
    assert "`cells[replay].reuse`" in sources.render()


def test_a_dataset_line_has_no_planned_figure() -> None:
    said = line(
        "chat",
        reuse("dataset", None, ArmHits(arm="a", ratio=0.0, hits=0, queries=5_166)),
        Sources(),
    )
    assert said.startswith("- **chat** (dataset): planned: no offline reuse (computed for ")
    assert "a 0.0% (0 of 5,166 tokens hit)" in said
