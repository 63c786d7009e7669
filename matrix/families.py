"""The metric-family registry as data: what must be measured for a cell to count.
The same concept at another layer: ``guards.families``.

17 required and 4 supplemental families (ARCHITECTURE §3). The presence rules are
implemented in ``guards.families``; this module only names each family, its
source, and the rule in words, so that the registry can be frozen into a matrix.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from faceoff.artifact import Spec
from matrix.fields import FieldError


class FamilySource(StrEnum):
    JOURNAL = "journal"  # the client's request journal
    ENGINE = "engine"  # the lane's /metrics samples
    GPU = "gpu"  # NVML samples
    HOST = "host"  # host and cgroup memory samples
    IDENTITY = "identity"  # the lane's boot log and identity record


class FamilyStatus(StrEnum):
    REQUIRED = "required"
    SUPPLEMENTAL = "supplemental"
    NOT_APPLICABLE = "not_applicable"


class FamilySpec(Spec):
    name: str = Field(description="Registry name of the family, e.g. 'ttft'.")
    source: FamilySource = Field(description="Which native artifact proves the family.")
    status: FamilyStatus = Field(description="required, supplemental or not_applicable.")
    rule: str = Field(description="The presence rule in words, as the guard applies it.")
    not_applicable_reason: str | None = Field(
        default=None, description="Why the frozen matrix declared the family not applicable."
    )


def _f(name: str, source: FamilySource, rule: str, kind: Literal["r", "s"] = "r") -> FamilySpec:
    status = FamilyStatus.REQUIRED if kind == "r" else FamilyStatus.SUPPLEMENTAL
    return FamilySpec(name=name, source=source, status=status, rule=rule)


_PER_REQUEST = "every scored ok request has"
_COVERED = "engine samples cover the cell (coverage and consecutive-miss thresholds) and carry"

DEFAULT_REGISTRY: tuple[FamilySpec, ...] = (
    _f("prompt_tokens", FamilySource.JOURNAL, f"{_PER_REQUEST} usage.prompt_tokens"),
    _f("completion_tokens", FamilySource.JOURNAL, f"{_PER_REQUEST} usage.completion_tokens"),
    _f("ttfo", FamilySource.JOURNAL, f"{_PER_REQUEST} a first reasoning-or-content chunk time"),
    _f("ttft", FamilySource.JOURNAL, f"{_PER_REQUEST} a first visible content chunk time"),
    _f("effective_prefill", FamilySource.JOURNAL, f"{_PER_REQUEST} prompt tokens and a TTFO > 0"),
    _f(
        "decode_rate",
        FamilySource.JOURNAL,
        f"{_PER_REQUEST} ≥ 2 completion tokens over a positive interval",
    ),
    _f("e2e", FamilySource.JOURNAL, f"{_PER_REQUEST} send and last-token times"),
    _f("tpot", FamilySource.JOURNAL, f"{_PER_REQUEST} ≥ 2 completion tokens and E2E > TTFO"),
    _f(
        "aggregate_output_throughput",
        FamilySource.JOURNAL,
        "≥ 1 scored ok request with a positive window",
    ),
    _f(
        "engine_prefill_time",
        FamilySource.ENGINE,
        "request_prefill_time_seconds sum and count deltas > 0",
    ),
    _f("engine_queue_time", FamilySource.ENGINE, "request_queue_time_seconds count delta > 0"),
    _f("engine_running", FamilySource.ENGINE, f"{_COVERED} num_requests_running"),
    _f("engine_waiting", FamilySource.ENGINE, f"{_COVERED} num_requests_waiting"),
    _f("kv_cache_usage", FamilySource.ENGINE, f"{_COVERED} kv_cache_usage_perc"),
    _f(
        "kv_pool_tokens", FamilySource.ENGINE, "cache_config_info gives block_size × num_gpu_blocks"
    ),
    _f(
        "gpu_memory", FamilySource.GPU, "GPU samples cover the cell with used/free/total per device"
    ),
    _f(
        "lane_cgroup_memory",
        FamilySource.HOST,
        "host samples cover the cell with the lane's memory",
    ),
    _f("host_available_memory", FamilySource.HOST, "host samples carry host available memory", "s"),
    _f(
        "preemptions",
        FamilySource.ENGINE,
        "num_preemptions_total present in first and last sample",
        "s",
    ),
    _f(
        "prefix_cache_hits",
        FamilySource.ENGINE,
        "prefix_cache_hits/queries present in samples",
        "s",
    ),
    _f(
        "engine_counter_reconciliation",
        FamilySource.ENGINE,
        "prompt/generation token and success deltas equal the journal's sums",
        "s",
    ),
)

FAMILY_NAMES: frozenset[str] = frozenset(f.name for f in DEFAULT_REGISTRY)


class Families(Spec):
    not_applicable: dict[str, str] = Field(
        default_factory=dict, description="Family -> why it cannot exist on this campaign's hosts."
    )
    require: list[str] = Field(
        default_factory=list, description="Supplemental families this campaign requires."
    )

    @model_validator(mode="after")
    def _known(self) -> Families:
        for name in self.not_applicable:
            _known_family(name, ("not_applicable", name))
        for index, name in enumerate(self.require):
            _known_family(name, ("require", index))
        return self

    def resolve(self) -> tuple[FamilySpec, ...]:
        """The registry as this campaign freezes it."""
        return tuple(self._resolve_one(fam) for fam in DEFAULT_REGISTRY)

    def _resolve_one(self, fam: FamilySpec) -> FamilySpec:
        if fam.name in self.not_applicable:
            return fam.model_copy(
                update={
                    "status": FamilyStatus.NOT_APPLICABLE,
                    "not_applicable_reason": self.not_applicable[fam.name],
                }
            )
        if fam.name in self.require:
            return fam.model_copy(update={"status": FamilyStatus.REQUIRED})
        return fam


def _known_family(name: str, where: tuple[str | int, ...]) -> None:
    if name not in FAMILY_NAMES:
        raise FieldError(
            where, f"unknown metric family {name!r}; known: {', '.join(sorted(FAMILY_NAMES))}"
        )
