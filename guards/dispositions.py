"""From families and rules to a disposition; the stop policy; campaign closure; pairs.

All pure. The order of ``decide`` is the contract: missing prerequisites → blocked; a
failed validity rule → failed, the first in ``RULES`` order as the root cause (an OOM kill
before the errors it caused), except ``host_stall`` and ``schedule_lag``, last, which block;
a required family missing → blocked; otherwise accepted. A failed cell triggers the
campaign's stop policy; a blocked one does not. In full: docs/guards.md, "Dispositions".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field

from faceoff.artifact import Spec
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.verdict import FamilyVerdict, Outcome, Presence, RuleResult
from faceoff.formats.reasons import Disposition, Reason, disposition_of
from guards.artifacts import CellArtifacts
from matrix.campaign_plan import CellRunKey, PairKey
from matrix.cell import WorkloadKind
from matrix.model import StopPolicy

MAX_NAMED = 3


@dataclass(frozen=True)
class Disposed:
    disposition: Disposition
    reason: Reason
    sentence: str


def prerequisite(art: CellArtifacts) -> Disposed | None:
    """A reason the cell could not be run or scored at all, from cell.json and the plan."""
    record = art.record
    blocked = Disposition.BLOCKED
    if not record.lane_ready:
        why = record.lane_ready_reason or "no reason recorded"
        return Disposed(blocked, Reason.LANE_NOT_READY, f"the lane never became ready: {why}")
    if record.identity is None or not record.identity.ok:
        never = "identity was never checked"
        why = (record.identity.reason or "no reason recorded") if record.identity else never
        return Disposed(blocked, Reason.IDENTITY_MISMATCH, f"identity not proven: {why}")
    if record.setup_error is not None:
        return Disposed(
            blocked, Reason.SETUP_FAILED, f"the cell could not be set up: {record.setup_error}"
        )
    if record.telemetry_error is not None:
        return Disposed(
            blocked,
            Reason.TELEMETRY_UNAVAILABLE,
            f"telemetry unavailable: {record.telemetry_error}",
        )
    return _missing_artifact(art)


def _missing_artifact(art: CellArtifacts) -> Disposed | None:
    why = None
    if art.plan is None:
        why = f"the request plan is unusable: {art.plan_error}"
    elif not art.record.ran:
        why = "cell.json says the client process was never started"
    elif art.record.lane_end is None:
        why = "cell.json does not record the lane's state after the cell (OOM and exit unknown)"
    return None if why is None else Disposed(Disposition.BLOCKED, Reason.ARTIFACTS_MISSING, why)


def decide(families: Sequence[FamilyVerdict], rules: Sequence[RuleResult]) -> Disposed:
    """The disposition of a cell that ran, from its families and rules (after prerequisites)."""
    failures = [r for r in rules if r.failed]
    if failures:
        also = [r.code.value for r in failures[1:]]
        tail = f" (also failed: {', '.join(also)})" if also else ""
        first = failures[0]
        # host_stall is a rule that blocks: the host, not the lane, made the cell unscorable.
        return Disposed(disposition_of(first.code), first.code, f"{first.detail}{tail}")
    blocking = [f for f in families if f.blocks]
    if blocking:
        named = "; ".join(f"{f.name}: {f.why}" for f in blocking[:MAX_NAMED])
        more = f" and {len(blocking) - MAX_NAMED} more" if len(blocking) > MAX_NAMED else ""
        sentence = f"required famil{'y' if len(blocking) == 1 else 'ies'} missing — {named}{more}"
        return Disposed(Disposition.BLOCKED, Reason.FAMILY_MISSING, sentence)
    return Disposed(Disposition.ACCEPTED, Reason.ACCEPTED, _accepted_sentence(families, rules))


def _accepted_sentence(families: Sequence[FamilyVerdict], rules: Sequence[RuleResult]) -> str:
    presence = Counter(f.presence for f in families)
    unevaluated = [
        f"{r.code.value} ({r.detail})" for r in rules if r.outcome is Outcome.NOT_EVALUATED
    ]
    supplemental_missing = [f.name for f in families if f.presence is Presence.MISSING]
    parts = [
        f"{presence[Presence.PRESENT]} families present, "
        f"{presence[Presence.NOT_APPLICABLE]} not applicable",
        "every validity rule passed or did not apply",
    ]
    if supplemental_missing:
        parts.append(f"supplemental missing: {', '.join(supplemental_missing)}")
    if unevaluated:
        parts.append(f"not evaluated: {'; '.join(unevaluated)}")
    parts += [r.detail for r in rules if r.evidence.get("flagged") and not r.failed]
    return "; ".join(parts)


# --- stop policy ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    """A cell run already decided, in campaign order."""

    key: CellRunKey
    kind: WorkloadKind
    disposition: Disposition


def stop_policy_block(
    policy: StopPolicy, earlier: Sequence[Ran], key: CellRunKey, kind: WorkloadKind
) -> Disposed | None:
    """Blocked by an earlier failure under the stop policy, or None to run the cell."""
    if policy is StopPolicy.CONTINUE:
        return None
    failed = [r for r in earlier if r.disposition is Disposition.FAILED]
    if policy is StopPolicy.BLOCK_WORKLOAD:
        failed = [r for r in failed if r.kind is kind]
    if not failed:
        return None
    scope = f"{kind.value} cells" if policy is StopPolicy.BLOCK_WORKLOAD else "every later cell"
    return Disposed(
        Disposition.BLOCKED,
        Reason.STOP_POLICY,
        f"{key} not run: {failed[0].key} failed and stop policy {policy.value} blocks {scope}",
    )


# --- campaign closure -------------------------------------------------------------------


class ClosureStatus(StrEnum):
    COMPLETE = "complete"
    CLOSED_PARTIAL = "closed_partial"


class Closure(Spec):
    status: ClosureStatus = Field(description="complete only if every planned run is accepted.")
    planned: int = Field(description="Cell runs in the frozen plan.")
    accepted: int = Field(description="Accepted cell runs.")
    failed: int = Field(description="Failed cell runs.")
    blocked: int = Field(description="Blocked cell runs.")
    pending: int = Field(description="Cell runs with no terminal disposition.")
    sentence: str = Field(description="One line with the counts.")


def close_campaign(
    planned: Sequence[CellRunKey], dispositions: Mapping[CellRunKey, Disposition]
) -> Closure:
    """Closure over the latest attempt of each planned cell run; absent runs are pending."""
    unplanned = sorted(str(k) for k in set(dispositions) - set(planned))
    if unplanned:
        raise FaceoffError(
            f"dispositions for cell runs the plan does not have: {', '.join(unplanned)}",
            fix="close the campaign under the frozen matrix it ran with",
        )
    counts = Counter(dispositions.get(k, Disposition.PENDING) for k in planned)
    accepted = counts[Disposition.ACCEPTED]
    status = ClosureStatus.COMPLETE if accepted == len(planned) else ClosureStatus.CLOSED_PARTIAL
    words = "complete" if status is ClosureStatus.COMPLETE else "closed partial"
    return Closure(
        status=status,
        planned=len(planned),
        accepted=accepted,
        failed=counts[Disposition.FAILED],
        blocked=counts[Disposition.BLOCKED],
        pending=counts[Disposition.PENDING],
        sentence=f"{words}: {accepted} accepted, {counts[Disposition.FAILED]} failed, "
        f"{counts[Disposition.BLOCKED]} blocked, {counts[Disposition.PENDING]} pending "
        f"of {len(planned)} planned cell runs",
    )


# --- pairs ------------------------------------------------------------------------------


class PairStatus(Spec):
    cell_id: str = Field(description="The cell both arms ran.")
    incumbent: str = Field(description="Incumbent arm.")
    candidate: str = Field(description="Candidate arm.")
    comparable: bool = Field(description="Both arms accepted and the pair's plans match.")
    reason: Reason | None = Field(description="arm_not_accepted or pair_mismatch when not.")
    sentence: str = Field(description="One line saying why.")
    integrity: RuleResult | None = Field(description="The pair-integrity rule, when judged.")


def pair_view(
    pairs: Sequence[PairKey],
    dispositions: Mapping[CellRunKey, Disposition],
    integrity: Mapping[PairKey, RuleResult],
) -> list[PairStatus]:
    """A pair is comparable only if both arms are accepted and its integrity rule passed."""
    return [_pair(p, dispositions, integrity.get(p)) for p in pairs]


def _pair(
    pair: PairKey, dispositions: Mapping[CellRunKey, Disposition], integrity: RuleResult | None
) -> PairStatus:
    keys = CellRunKey(pair.cell_id, pair.incumbent), CellRunKey(pair.cell_id, pair.candidate)
    states = [dispositions.get(k, Disposition.PENDING) for k in keys]
    base = {"cell_id": pair.cell_id, "incumbent": pair.incumbent, "candidate": pair.candidate}
    if any(s is not Disposition.ACCEPTED for s in states):
        said = ", ".join(f"{k.arm} {s.value}" for k, s in zip(keys, states, strict=True))
        return PairStatus(
            **base,
            comparable=False,
            reason=Reason.ARM_NOT_ACCEPTED,
            sentence=f"not comparable: {said}",
            integrity=integrity,
        )
    if integrity is None:
        raise FaceoffError(
            f"pair {pair.cell_id} {pair.incumbent}/{pair.candidate} has both arms accepted "
            "but no pair-integrity result",
            fix="judge the pair with guards.judge.judge_pair before building the pair view",
        )
    ok = integrity.outcome is Outcome.PASSED
    return PairStatus(
        **base,
        comparable=ok,
        reason=None if ok else Reason.PAIR_MISMATCH,
        sentence=("comparable: " if ok else "not comparable: ") + integrity.detail,
        integrity=integrity,
    )
