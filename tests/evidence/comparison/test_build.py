"""A declared rule on a real simulated campaign: one candidate planted clearly faster than the
incumbent, one clearly slower, one as fast but failing a counted cell; the rule promotes the
first, does not promote the second, and leaves no decision on the third, and the card's first
lines say so. The review then refuses a decision that contradicts the rule unless forced.

A test of the whole evidence package around a rule, kept beside the comparison's build:
the rule's outcome for each candidate, as the built comparison carries it, is what it
mainly asserts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from evidence.audit.reverify import audit_bundle
from evidence.bundle.write import BundleIndex, write_bundle
from evidence.reviews.recording import ReviewRequest
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.reviews import Decision, read_reviews
from faceoff.formats.host_facts import HostFacts, SourceFacts
from flows.cli.review import record_review
from matrix.model import Matrix
from tests.conftest import free_port
from tests.evidence.campaign import now, run_campaign
from tests.flows.cli.test_review import ledger_for, utc_now
from tests.foundation.cli import faceoff
from tests.shared_once import shared_once

NAME = "rule-sim"
# The tiny profile decodes a token in 5 ms at time_scale 1; the incumbent runs at 10 ms, and
# the planted differences are twice and half its speed, far beyond the 5 % margin and the
# 10 % target. Slow enough that a host stall rarely delivers a whole answer in one read.
SPEEDS = {"incumbent": 0.5, "faster": 1.0, "slower": 0.25, "failing": 0.5}
RULE = {
    "criteria": [
        {"metric": "e2e_s", "non_inferiority": 0.05},
        {"metric": "decode_tps", "superiority": 0.10},
        # the fastest requests' rate: a host stall slows one request, not the p95 rate; a wide
        # margin, as a p95 of 29 requests held to 2.5 % / 3 candidates swings on a loaded host
        {"metric": "decode_tps", "statistic": "p95", "non_inferiority": 0.30},
    ]
}


def tiny_arm(name: str, speed: float, faults: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "role": "incumbent" if name == "incumbent" else "candidate",
        "lane": "simulator",
        "port": free_port(),
        "served_model": "sim-tiny",
        "startup_deadline_s": 60,
        "probes": {"poll_interval_s": 0.1},
        "simulator": {"profile": "tiny", "time_scale": speed, "faults": faults},
    }


def rule_matrix() -> Matrix:
    sampling = {"max_tokens": 96, "reasoning_effort": "high"}
    # contract_overrun ignores "exactly N words": the failing arm's controlled cell fails
    faults = {name: {"contract_overrun": True} if name == "failing" else {} for name in SPEEDS}
    return Matrix.model_validate(
        {
            "campaign": {"name": NAME, "seed": 5, "stop_policy": "continue"},
            "arms": [tiny_arm(name, speed, faults[name]) for name, speed in SPEEDS.items()],
            "cells": [
                # 29 requests: the fewest whose intervals may decide at C1
                {"id": "natural-512-c1", "kind": "natural", "input_tokens": 512,
                 "concurrency": 1, "requests": 29, "sampling": sampling},
                {"id": "controlled-512-c1", "kind": "controlled", "input_tokens": 512,
                 "concurrency": 1, "requests": 5, "output_words": 16, "sampling": sampling,
                 "arms": ["incumbent", "failing"]},
            ],
            # lenient sampling: the shared host stalls, and telemetry has its own tests
            "thresholds": {"engine_period_s": 0.25, "memory_period_s": 0.5,
                           "min_coverage": 0.2, "max_consecutive_misses": 40,
                           "max_stalled_requests": 1.0, "max_client_cpu_wait": 1.0},
            "families": {"not_applicable": {"gpu_memory": "simulator lanes run without GPUs"}},
            "rule": RULE,
        }
    )  # fmt: skip


@pytest.fixture(scope="session")
def ruled(
    tmp_path_factory: pytest.TempPathFactory, host_facts: HostFacts, source_facts: SourceFacts
) -> BundleIndex:
    """The ruled campaign's bundle, made once per run (every xdist worker reads it)."""

    def run(workdir: Path) -> BundleIndex:
        workdir.mkdir(parents=True)
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        folder = run_campaign(workdir, rule_matrix(), environ)
        return write_bundle(folder, now=now, host=host_facts, source=source_facts)

    return shared_once(tmp_path_factory, "rule-campaign", run)


def test_the_rule_yields_each_outcome_for_its_planted_candidate(ruled: BundleIndex) -> None:
    ruling = ruled.comparison.ruling
    assert ruling is not None
    outcomes = {c.candidate: c.outcome for c in ruling.candidates}
    failures = [f"{f.cell}/{f.arm} {f.reason_code}: {f.reason}" for f in ruled.comparison.failures]
    assert outcomes == {
        "faster": "promote",
        "slower": "do_not_promote",
        "failing": "no_decision",
    }, failures
    slower = next(c for c in ruling.candidates if c.candidate == "slower")
    # a p95 of 29 requests held to 2.5 % / 3 candidates, its interval widened for what its
    # blocks miss: on a loaded host it may not decide, never may it be met
    assert [line.status for line in slower.criteria][:2] == ["not_met", "not_met"]
    assert slower.criteria[2].status in ("not_met", "inconclusive")
    failing = next(c for c in ruling.candidates if c.candidate == "failing")
    assert failing.not_accepted == ["controlled-512-c1/failing failed"]


def test_the_card_opens_with_the_rule_outcome_and_its_criteria(ruled: BundleIndex) -> None:
    lines = (ruled.root / "RESULT.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"# {NAME}: incumbent versus faster, slower and failing"
    assert lines[2] == "Declared rule: **promote** faster: of 3 criteria, 3 met."
    assert lines[7] in (
        "Declared rule: **do not promote** slower: of 3 criteria, 3 not met.",
        "Declared rule: **do not promote** slower: of 3 criteria, 2 not met and 1 inconclusive.",
    )  # its p95 criterion may not decide on a loaded host (above)
    assert lines[12] == (
        "Declared rule: **no decision** failing: counted cell runs not accepted "
        "(controlled-512-c1/failing failed), and the rule says no_decision."
    )
    e2e = "- E2E p50 no worse than 5% (candidate/incumbent ≤ 1.05): "
    decode = "- decode p50 at least 10% better (candidate/incumbent ≥ 1.10): "
    tail = "- decode p95 no worse than 30% (candidate/incumbent ≥ 0.70): "
    assert all(lines[n].startswith(p + "met — ") for n, p in ((3, e2e), (4, decode), (5, tail)))
    assert lines[8].startswith(e2e + "not met — ") and lines[9].startswith(decode + "not met — ")
    assert lines[10].startswith((tail + "not met — ", tail + "inconclusive — "))
    assert all(lines[n].startswith(p) for n, p in ((13, e2e), (14, decode), (15, tail)))
    # the campaign's error rates, then the recorded decision, follow the rule
    assert lines[17].startswith("Promote needs every criterion met in every cell it judges")
    assert "split across the 3 candidates (0.83% each)" in lines[17]
    assert lines[19].startswith("Observed: ")


def test_a_p95_criterion_is_judged_on_the_ratio_of_the_arms_p95s(ruled: BundleIndex) -> None:
    for cell in ruled.comparison.cells:
        incumbent = cell.arms[0].metrics["decode_tps"].p95
        for tail in cell.tail_ratios:
            assert (tail.metric, tail.statistic) == ("decode_tps", "p95")
            theirs = next(a for a in cell.arms if a.arm == tail.candidate).metrics["decode_tps"]
            assert incumbent is not None and theirs.p95 is not None
            assert tail.ratio == pytest.approx(theirs.p95 / incumbent)
    natural = next(c for c in ruled.comparison.cells if c.id == "natural-512-c1")
    assert {r.candidate for r in natural.tail_ratios} == {"faster", "slower", "failing"}


def test_the_review_refuses_a_decision_against_the_rule_unless_forced(
    ruled: BundleIndex, tmp_path: Path
) -> None:
    root = tmp_path / NAME
    shutil.copytree(ruled.root, root)
    engine: Engine = ledger_for(root, "closed_partial")
    against = ReviewRequest("alice", Decision.NO_PROMOTION, "keep the incumbent")
    with pytest.raises(FaceoffError, match="the declared rule's outcome is promote for faster"):
        record_review(engine, NAME, against, now=utc_now)
    assert not (root / "reviews.jsonl").exists()
    refused = faceoff(
        "review", NAME, "--workdir", str(root.parent),
        "--decision", "no_promotion", "--note", "keep the incumbent",
    )  # fmt: skip
    assert refused.returncode == 2 and "--force-reason" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    forced = ReviewRequest(
        "alice", Decision.NO_PROMOTION, "keep the incumbent", force_reason="a canary regressed"
    )
    record_review(engine, NAME, forced, now=utc_now)
    (record,) = read_reviews(root)
    assert record.forced_reason == "a canary regressed"
    assert record.overrode_rule == "the declared rule's outcome is promote for faster"
    card = (root / "RESULT.md").read_text(encoding="utf-8")
    assert "(forced: a canary regressed). Against the declared rule: the declared rule's" in card
    assert audit_bundle(root).ok
