"""Rule results as data: constructors that keep every rule's return short."""

from __future__ import annotations

from faceoff.formats.attempt.verdict import Evidence, EvidenceValue, Outcome, RuleResult
from faceoff.formats.reasons import Reason


def _result(code: Reason, outcome: Outcome, detail: str, evidence: Evidence) -> RuleResult:
    return RuleResult(code=code, outcome=outcome, detail=detail, evidence=evidence)


def passed(code: Reason, detail: str, **evidence: EvidenceValue) -> RuleResult:
    return _result(code, Outcome.PASSED, detail, evidence)


def failed(code: Reason, detail: str, **evidence: EvidenceValue) -> RuleResult:
    return _result(code, Outcome.FAILED, detail, evidence)


def not_applicable(code: Reason, detail: str) -> RuleResult:
    return _result(code, Outcome.NOT_APPLICABLE, detail, {})


def not_evaluated(code: Reason, detail: str, **evidence: EvidenceValue) -> RuleResult:
    return _result(code, Outcome.NOT_EVALUATED, detail, evidence)


def judged(code: Reason, ok: bool, detail: str, **evidence: EvidenceValue) -> RuleResult:
    """Passed or failed by ``ok``, with the same sentence and values either way."""
    return (passed if ok else failed)(code, detail, **evidence)
