"""Arm entries of the comparison: recipe, identity and boot-log facts. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from evidence.attempt.cold_start import cold_start
from evidence.comparison.read import LaneInputs
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.bundle.comparison import ArmEntry, ArmIdentity, SimulatorFacts
from faceoff.formats.bundle.lane_facts import ColdStart
from faceoff.formats.lane import BOOT_LOG_FILE, IDENTITY_FILE, LANE_FILE
from lanes.lane_context import LanePurpose
from matrix.arm import Arm, Role
from workload.records import WARMUP_DIR


def arm_entry(arm: Arm, runs: Sequence[LaneInputs]) -> ArmEntry:
    """The arm as the matrix describes it and as its first campaign lane run proved it."""
    shown = _shown_run(runs)
    sim = arm.simulator
    return ArmEntry(
        name=arm.name,
        role="incumbent" if arm.role is Role.INCUMBENT else "candidate",
        lane=arm.lane.value,
        image=arm.image,
        recipe=arm.recipe,
        env_knobs=dict(arm.env),
        engine_args=list(arm.engine_args),
        memory_limit=arm.memory_limit,
        simulator=SimulatorFacts(profile=sim.profile, time_scale=sim.time_scale) if sim else None,
        identity=_identity(shown),
        boot=shown.boot if shown else None,
        sources=_sources(shown),
        cold_start=_cold_start(shown),
    )


def _cold_start(run: LaneInputs | None) -> ColdStart | None:
    if run is None:
        return None
    return cold_start(run.run, run.warmups, f"{run.run}/{WARMUP_DIR}/{JOURNAL_NAME}")


def _shown_run(runs: Sequence[LaneInputs]) -> LaneInputs | None:
    """The first campaign run whose identity verified, else the first campaign run."""
    prefix = f"{LanePurpose.CAMPAIGN.value}-"  # lanes name each run <purpose>-<NNN>
    campaign = [r for r in runs if r.run.rsplit("/", 1)[-1].startswith(prefix)]
    verified = [r for r in campaign if r.identity is not None and r.identity.verdict.ok]
    return next(iter(verified or campaign), None)


def _identity(run: LaneInputs | None) -> ArmIdentity:
    identity = run.identity if run else None
    if identity is None:
        return ArmIdentity(
            lane_run=run.run if run else None,
            verified=None,
            running_image=None,
            served_model=None,
            root=None,
            quantizations=[],
            weights_sha256=None,
        )
    observed = identity.observed
    model = next((m for m in observed.models if m.id == identity.expected.served_model), None)
    return ArmIdentity(
        lane_run=run.run if run else None,
        verified=identity.verdict.ok,
        running_image=observed.image,
        served_model=model.id if model else None,
        root=model.root if model else None,
        quantizations=list(observed.quantizations),
        weights_sha256=observed.weights_sha256,
    )


def _sources(run: LaneInputs | None) -> list[str]:
    if run is None:
        return []
    present = [
        (name, obj)
        for name, obj in (
            (LANE_FILE, run.record),
            (IDENTITY_FILE, run.identity),
            (BOOT_LOG_FILE, run.boot),
        )
        if obj is not None
    ]
    return [f"{run.run}/{name}" for name, _ in present]
