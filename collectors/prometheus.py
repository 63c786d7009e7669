"""Prometheus text -> the canonical values faceoff uses (pure).

Parsing is ``prometheus_client``'s own parser. Histogram bucket lines are
dropped before parsing: faceoff keeps only ``_sum``/``_count``, the buckets are
most of a vLLM scrape, and the raw text of the cell's first and last scrape is
kept whole beside the samples.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from collectors.aliases import Alias, AliasTable, Kind
from faceoff.formats.attempt.collector_samples import EngineMetrics, HistogramPoint

_BUCKET_LINE = re.compile(r"^[^#\s{]*_bucket[{\s]", re.M)
# (suffix of a sample name, which part of an alias it feeds)
_SUFFIXES = (("", "value"), ("_sum", "sum"), ("_count", "count"))
_PART_KINDS = {
    "value": (Kind.GAUGE, Kind.COUNTER, Kind.INFO),
    "sum": (Kind.HISTOGRAM,),
    "count": (Kind.HISTOGRAM,),
}


class MetricsParseError(ValueError):
    """The body is not Prometheus text exposition."""


@dataclass
class _Series:
    part: str
    labels: dict[str, str]
    value: float


@dataclass
class _Found:
    """Series seen per canonical family, grouped by the wire name they came under."""

    by_wire: dict[str, dict[str, list[_Series]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    declared: dict[str, str] = field(default_factory=dict)  # canonical -> wire, no series yet

    def add(self, alias: Alias, wire: str, series: _Series) -> None:
        self.by_wire[alias.canonical][wire].append(series)

    def declare(self, table: AliasTable, family: str) -> None:
        """A counter or histogram family exposed before its first series: all zero so far."""
        for wire in (family, family.removesuffix("_total")):
            alias = table.get(wire)
            if alias is not None and alias.kind in (Kind.COUNTER, Kind.HISTOGRAM):
                self.declared.setdefault(alias.canonical, wire)
                return


def without_buckets(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not _BUCKET_LINE.match(line))


def parse_metrics(text: str, table: AliasTable) -> EngineMetrics:
    """Canonical gauges, counters, histogram sum/count and info labels of one scrape."""
    found = _Found()
    try:
        for family in text_string_to_metric_families(without_buckets(text)):
            if not family.samples:
                found.declare(table, family.name)
            for sample in family.samples:
                _collect(found, table, sample.name, dict(sample.labels), sample.value)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise MetricsParseError(f"not Prometheus text: {exc}") from exc
    return _assemble(found, table)


def _collect(
    found: _Found, table: AliasTable, name: str, labels: dict[str, str], value: float
) -> None:
    located = _locate(table, name)
    if located is not None:
        alias, wire, part = located
        found.add(alias, wire, _Series(part, labels, value))


def _locate(table: AliasTable, name: str) -> tuple[Alias, str, str] | None:
    """The alias a sample name feeds: exact, or without `_total`, or as a histogram part."""
    for suffix, part in _SUFFIXES:
        if not name.endswith(suffix):
            continue
        base = name.removesuffix(suffix)
        for wire in (base, base.removesuffix("_total")):
            alias = table.get(wire)
            if alias is not None and alias.kind in _PART_KINDS[part]:
                return alias, wire, part
    return None


@dataclass
class _Values:
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, HistogramPoint] = field(default_factory=dict)
    info: dict[str, dict[str, str]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)

    def present(self) -> set[str]:
        counted = {key.split("{", 1)[0] for key in self.counters}
        return {*self.gauges, *self.histograms, *self.info, *counted, *self.declared}

    def put_zero(self, alias: Alias) -> None:
        """A declared counter or histogram without series: prometheus_client starts them at 0."""
        self.declared.add(alias.canonical)
        if alias.kind is Kind.HISTOGRAM:
            self.histograms[alias.canonical] = HistogramPoint(sum=0.0, count=0.0)
        elif alias.by_label is None:
            self.counters[alias.canonical] = 0.0

    def put(self, alias: Alias, series: list[_Series]) -> bool:
        """Store one family's value; False when its series carry no usable (finite) value."""
        finite = [s for s in series if math.isfinite(s.value)]
        if not finite:
            return False
        if alias.kind is Kind.GAUGE:
            values = [s.value for s in finite]
            self.gauges[alias.canonical] = max(values) if alias.combine == "max" else sum(values)
        elif alias.kind is Kind.COUNTER:
            self.counters.update(_counter_values(alias, finite))
        elif alias.kind is Kind.HISTOGRAM:
            point = _histogram_point(finite)
            if point is None:
                return False
            self.histograms[alias.canonical] = point
        else:
            labels = finite[0].labels
            self.info[alias.canonical] = {k: labels[k] for k in alias.keep_labels if k in labels}
        return True


def _assemble(found: _Found, table: AliasTable) -> EngineMetrics:
    values = _Values()
    aliased: dict[str, str] = {}
    for alias in table:
        seen = found.by_wire.get(alias.canonical, {})
        wire = next((w for w in alias.wire if w in seen), None)
        if wire is None and alias.canonical in found.declared:
            wire = found.declared[alias.canonical]
            values.put_zero(alias)
        elif wire is None or not values.put(alias, seen[wire]):
            continue
        if wire != alias.wire[0]:
            aliased[alias.canonical] = wire
    present = values.present()
    return EngineMetrics(
        gauges=values.gauges,
        counters=values.counters,
        histograms=values.histograms,
        info=values.info,
        missing=[name for name in table.expected if name not in present],
        aliased=aliased,
    )


def _counter_values(alias: Alias, series: list[_Series]) -> dict[str, float]:
    if alias.by_label is None:
        return {alias.canonical: sum(s.value for s in series)}
    values: dict[str, float] = defaultdict(float)
    for s in series:
        values[f'{alias.canonical}{{{alias.by_label}="{s.labels.get(alias.by_label, "")}"}}'] += (
            s.value
        )
    return dict(values)


def _histogram_point(series: list[_Series]) -> HistogramPoint | None:
    sums = [s.value for s in series if s.part == "sum"]
    counts = [s.value for s in series if s.part == "count"]
    if not sums or not counts:
        return None
    return HistogramPoint(sum=sum(sums), count=sum(counts))
