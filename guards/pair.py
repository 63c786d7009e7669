"""Pair integrity: did both arms of a pair send the same requests? A pure comparison.

Both arms' plans (``requests.json``) must record the same prompt-token vector hash for every
request index: each lane tokenized the same text with its own tokenizer and chat template,
so equal hashes prove both engines prefilled the same tokens. What else must match (seed,
namespace, cell spec, an open loop's schedule, sampling but the declared variants, a dataset
or trace cell's source, a needle search's range): docs/guards.md, "Validity rules".
"""

from __future__ import annotations

from faceoff.formats.attempt.request_plan import PlannedRequest, RequestPlan
from faceoff.formats.attempt.verdict import Evidence, RuleResult
from faceoff.formats.reasons import Reason
from guards.outcomes import failed, passed
from guards.pair_sampling import sampling_differences

MAX_LISTED = 10


def _header_differences(incumbent: RequestPlan, candidate: RequestPlan) -> list[str]:
    pairs = [
        ("seed", incumbent.seed, candidate.seed),
        ("prompt namespace", incumbent.namespace, candidate.namespace),
        ("cell id", incumbent.cell.id, candidate.cell.id),
    ]
    found = [f"{what} {a!r} vs {b!r}" for what, a, b in pairs if a != b]
    if incumbent.cell != candidate.cell and incumbent.cell.id == candidate.cell.id:
        found.append("the cell specs differ")
    if incumbent.load != candidate.load:
        found.append("the open-loop loads (arrival, rate or sweep, SLO) differ")
    if incumbent.source != candidate.source:
        found.append("the source rows (the dataset rows or trace records drawn) differ")
    return found


def _schedule(request: PlannedRequest) -> tuple[int | None, float | None]:
    return request.step, request.arrival_s


def pair_integrity(incumbent: RequestPlan, candidate: RequestPlan) -> RuleResult:
    """PAIR_MISMATCH unless both plans send the same prompt-token vectors, index by index."""
    code = Reason.PAIR_MISMATCH
    problems = _header_differences(incumbent, candidate)
    ours = {(r.phase, r.index): r for r in incumbent.requests}
    theirs = {(r.phase, r.index): r for r in candidate.requests}
    only = sorted(set(ours) ^ set(theirs))
    if only:
        problems.append(f"{len(only)} request(s) planned on one arm only")
    shared = sorted(set(ours) & set(theirs))
    sampling = sampling_differences(ours, theirs, frozenset(incumbent.cell.variants))
    if sampling.undeclared:
        problems.append(f"sampling differs undeclared: {'; '.join(sampling.undeclared)}")
    differ = [
        k
        for k in shared
        if ours[k].prompt_sha256 != theirs[k].prompt_sha256 and k not in sampling.vectors_by_design
    ]
    if differ:
        phase, index = first = differ[0]
        problems.append(
            f"prompt-token vectors differ for {len(differ)} request(s), first {phase.value} "
            f"{index} ({ours[first].prompt_sha256[:12]} vs {theirs[first].prompt_sha256[:12]})"
        )
    late = [k for k in shared if _schedule(ours[k]) != _schedule(theirs[k])]
    if late:
        problems.append(f"arrival schedules differ for {len(late)} request(s), first {late[0][1]}")
    evidence: Evidence = {
        "requests": len(ours),
        "vector_mismatches": len(differ),
        "mismatched_indices": [index for _, index in differ[:MAX_LISTED]],
        "unmatched_requests": len(only),
        "seeds": [str(incumbent.seed), str(candidate.seed)],
        "namespaces": [incumbent.namespace, candidate.namespace],
        "by_design": sampling.by_design,
    }
    if problems:
        return failed(code, f"the pair's plans differ: {'; '.join(problems)}", **evidence)
    search = incumbent.cell.search
    if search is not None:
        return passed(
            code,
            f"both arms search the same range ({search.low}–{search.high} tokens, step "
            f"{search.step}, {search.budget} probes at most) with seed {incumbent.seed} and "
            f"namespace {incumbent.namespace!r}; each probes the lengths its own answers "
            "lead to, and the verified lengths are what is paired",
            **evidence,
        )
    design = f"; by design: {', '.join(sampling.by_design)}" if sampling.by_design else ""
    rendered = len(sampling.vectors_by_design)
    vectors = (
        f"the same messages ({rendered} vector(s) rendered differently by the declared variant)"
        if rendered
        else "equal prompt-token vectors"
    )
    return passed(
        code,
        f"both arms planned the same {len(ours)} requests with {vectors}, "
        f"seed {incumbent.seed} and namespace {incumbent.namespace!r}{design}",
        **evidence,
    )
