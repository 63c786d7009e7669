"""The metric guard over captured cells: presence rules, the registry, not-applicable."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from collectors.aliases import vllm_aliases
from collectors.telemetry import load_cell_samples, summarize
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.collector_samples import EngineSample
from faceoff.formats.attempt.verdict import FamilyVerdict, Presence
from faceoff.formats.frozen_matrix import FrozenMatrix
from guards.artifacts import CellArtifacts
from guards.families import PRESENCE_RULES
from guards.metric_guard import metric_guard
from matrix.families import DEFAULT_REGISTRY, Families, FamilySource, FamilySpec, FamilyStatus
from matrix.thresholds import Thresholds
from tests.guards.helpers import CELLS, load, num, with_record

JOURNAL_FAMILIES = [f.name for f in DEFAULT_REGISTRY if f.source is FamilySource.JOURNAL]


def families(name: str, frozen: FrozenMatrix) -> dict[str, FamilyVerdict]:
    verdicts = metric_guard(load(name), frozen.registry, frozen.matrix.thresholds)
    return {v.name: v for v in verdicts}


def test_every_registry_family_has_exactly_one_presence_rule() -> None:
    assert set(PRESENCE_RULES) == {f.name for f in DEFAULT_REGISTRY}
    assert len(DEFAULT_REGISTRY) == 21


def test_a_registry_family_without_a_rule_is_an_error(frozen: FrozenMatrix) -> None:
    extra = FamilySpec(
        name="speculative_acceptance",
        source=FamilySource.ENGINE,
        status=FamilyStatus.REQUIRED,
        rule="?",
    )
    with pytest.raises(FaceoffError, match="speculative_acceptance") as err:
        metric_guard(load("natural"), (*frozen.registry, extra), frozen.matrix.thresholds)
    assert "Upgrade faceoff" in err.value.message


def test_a_clean_cell_has_every_family_present_but_the_declared_one(
    frozen: FrozenMatrix,
) -> None:
    found = families("natural", frozen)
    assert list(found) == [f.name for f in frozen.registry]  # registry order
    absent = {n: v.presence for n, v in found.items() if v.presence is not Presence.PRESENT}
    assert absent == {"gpu_memory": Presence.NOT_APPLICABLE}
    assert found["gpu_memory"].why == "simulator lanes run on hosts without GPUs"
    assert found["kv_pool_tokens"].evidence["kv_pool_tokens"] == 32_768  # tiny profile's pool
    assert found["engine_prefill_time"].evidence["count_delta"] == 7  # 1 warmup + 6 scored
    assert found["ttft"].evidence == {"requests": 6}


def test_a_dropped_engine_family_is_missing_with_why(frozen: FrozenMatrix) -> None:
    found = families("family-missing", frozen)
    missing = [v for v in found.values() if v.presence is Presence.MISSING]
    assert [v.name for v in missing] == ["engine_prefill_time"]
    assert missing[0].blocks
    assert missing[0].why == "request_prefill_time_seconds is absent from the engine samples"


def test_a_renamed_engine_family_is_resolved_by_alias(frozen: FrozenMatrix) -> None:
    found = families("legacy-names", frozen)
    kv = found["kv_cache_usage"]
    assert kv.presence is Presence.PRESENT
    assert kv.evidence["read_as"] == "vllm:gpu_cache_usage_perc"
    assert found["prefix_cache_hits"].presence is Presence.PRESENT  # gpu_prefix_cache_hits
    assert all(v.presence is not Presence.MISSING for v in found.values())


def test_a_metrics_gap_leaves_the_gauges_short_of_coverage(frozen: FrozenMatrix) -> None:
    found = families("metrics-gap", frozen)
    short = {n for n, v in found.items() if v.presence is Presence.MISSING}
    assert short == {"engine_running", "engine_waiting", "kv_cache_usage"}
    evidence = found["engine_running"].evidence
    assert num(evidence["coverage"]) < 0.95 or num(evidence["max_consecutive_misses"]) > 2
    # exact deltas need only the baseline and final samples, which answered
    assert found["engine_prefill_time"].presence is Presence.PRESENT


def resampled(
    name: str, change: Callable[[list[EngineSample]], list[EngineSample]]
) -> CellArtifacts:
    """A captured cell judged over its engine samples as ``change`` rewrites them."""
    art = load(name)
    samples = load_cell_samples(CELLS / name)
    samples.engine = change(samples.engine)
    assert art.record.window is not None
    telemetry = summarize(
        samples,
        window=art.record.window,
        settings=art.record.collector_settings,
        table=vllm_aliases(),
    )
    return dataclasses.replace(art, telemetry=telemetry)


def late_by(fraction: float) -> Callable[[list[EngineSample]], list[EngineSample]]:
    def change(engine: list[EngineSample]) -> list[EngineSample]:
        return [
            s
            if s.final
            else s.model_copy(update={"actual_ns": s.scheduled_ns + int(s.period_ns * fraction)})
            for s in engine
        ]

    return change


def test_samples_taken_late_never_make_a_family_missing(frozen: FrozenMatrix) -> None:
    # Every tick taken 90 % of a period behind schedule, far past the 20 % lateness slack.
    art = resampled("natural", late_by(0.9))
    found = {v.name: v for v in metric_guard(art, frozen.registry, frozen.matrix.thresholds)}
    running = found["engine_running"]
    assert running.presence is Presence.PRESENT
    assert running.evidence["coverage"] == 1.0
    assert num(running.evidence["late"]) == num(running.evidence["carried"]) > 0
    assert num(running.evidence["max_lateness_ms"]) == pytest.approx(225, abs=1)  # 0.9 × 250 ms
    assert not any(v.blocks for v in found.values())


def test_ticks_never_taken_make_the_family_missing(frozen: FrozenMatrix) -> None:
    def drop_three_in_a_row(engine: list[EngineSample]) -> list[EngineSample]:
        scheduled = [s.seq for s in engine if not s.final]
        gone = set(scheduled[len(scheduled) // 2 :][:3])
        return [s for s in engine if s.final or s.seq not in gone]

    art = resampled("natural", drop_three_in_a_row)
    found = {v.name: v for v in metric_guard(art, frozen.registry, frozen.matrix.thresholds)}
    running = found["engine_running"]
    assert running.presence is Presence.MISSING and running.blocks
    assert running.evidence["max_consecutive_misses"] == 3
    assert "never taken, failed or without it" in (running.why or "")


def test_looser_coverage_thresholds_accept_the_same_gap(frozen: FrozenMatrix) -> None:
    loose = Thresholds(
        engine_period_s=0.25, memory_period_s=0.5, min_coverage=0.5, max_consecutive_misses=10
    )
    verdicts = metric_guard(load("metrics-gap"), frozen.registry, loose)
    assert all(v.presence is not Presence.MISSING for v in verdicts)


def test_sampling_slower_than_the_matrix_requires_is_missing(frozen: FrozenMatrix) -> None:
    art = load("natural")
    slow = art.record.collector_settings.model_copy(update={"engine_period_s": 0.5})
    verdicts = metric_guard(
        with_record(art, collector_settings=slow), frozen.registry, frozen.matrix.thresholds
    )
    running = next(v for v in verdicts if v.name == "engine_running")
    assert running.presence is Presence.MISSING
    assert running.why == "engine samples were taken every 0.5 s; the matrix requires 0.25 s"


def test_a_counter_reset_makes_the_histogram_deltas_inexact(frozen: FrozenMatrix) -> None:
    found = families("counter-reset", frozen)
    prefill = found["engine_prefill_time"]
    assert prefill.presence is Presence.MISSING
    assert "counters reset during the cell" in (prefill.why or "")


def test_a_prefill_probe_has_no_decode_families_by_design(frozen: FrozenMatrix) -> None:
    found = families("prefill-probe", frozen)
    by_design = {n for n, v in found.items() if v.presence is Presence.NOT_APPLICABLE}
    assert by_design == {"ttft", "decode_rate", "tpot", "gpu_memory"}
    assert "max_tokens = 1" in (found["tpot"].why or "")
    assert found["ttfo"].presence is Presence.PRESENT
    assert found["effective_prefill"].presence is Presence.PRESENT


def test_gpu_memory_is_missing_unless_the_matrix_declares_it_not_applicable(
    frozen: FrozenMatrix,
) -> None:
    registry = Families().resolve()  # nothing declared
    verdicts = metric_guard(load("natural"), registry, frozen.matrix.thresholds)
    gpu = next(v for v in verdicts if v.name == "gpu_memory")
    assert gpu.presence is Presence.MISSING and gpu.blocks
    assert "[families.not_applicable]" in (gpu.why or "")


def test_journal_families_need_an_ok_request(frozen: FrozenMatrix) -> None:
    found = families("contract-overrun", frozen)  # every request ran to max_tokens
    for name in JOURNAL_FAMILIES[:-1]:
        assert found[name].presence is Presence.MISSING, name
        assert found[name].why == "no scored request ended ok (0 of 3)"
    # throughput counts every scored request that reported usage
    assert found["aggregate_output_throughput"].presence is Presence.PRESENT


def test_a_required_supplemental_family_blocks_when_missing(frozen: FrozenMatrix) -> None:
    registry = Families(require=["preemptions"]).resolve()
    verdicts = metric_guard(load("counter-reset"), registry, frozen.matrix.thresholds)
    preemptions = next(v for v in verdicts if v.name == "preemptions")
    assert preemptions.status is FamilyStatus.REQUIRED and preemptions.blocks


def test_a_cell_without_a_telemetry_window_answers_every_telemetry_family_missing(
    frozen: FrozenMatrix,
) -> None:
    art = dataclasses.replace(load("natural"), telemetry=None)
    verdicts = metric_guard(art, Families().resolve(), frozen.matrix.thresholds)
    telemetry = [v for v in verdicts if v.source is not FamilySource.JOURNAL]
    assert len(telemetry) == 12  # engine, GPU and host families
    assert {v.presence for v in telemetry} == {Presence.MISSING}
    assert {v.why for v in telemetry} == {
        "cell.json has no window (no request was sent): nothing to judge over"
    }
