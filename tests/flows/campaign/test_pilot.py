"""What the pilot blocks, as a pure function of its requests: a contract's cells on the arm
that failed it (only the failing lengths when its shortest passed), a cell on every arm when
no pair of it could decide, everything when strict; and what in one request is a failure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evidence.attempt.pilot import probe_failure
from faceoff.formats.attempt.journal import Phase, RequestOutcome, RequestRole, Status, Usage
from faceoff.formats.pilot import PilotLane, PilotMode, PilotProbe
from flows.campaign.pilot import decide, mode_of
from matrix.contracts import contracts
from matrix.model import Matrix

SIM = {"lane": "simulator", "served_model": "m", "simulator": {"profile": "tiny"}}
NATURAL = {"kind": "natural", "concurrency": 1, "requests": 2, "sampling": {"max_tokens": 64}}
CONTROLLED = NATURAL | {"kind": "controlled", "output_words": 16}


def matrix(*candidates: str) -> Matrix:
    arms = [SIM | {"name": "inc", "role": "incumbent", "port": 9001}]
    arms += [
        SIM | {"name": c, "role": "candidate", "port": 9002 + i} for i, c in enumerate(candidates)
    ]
    cells = [NATURAL | {"id": "nat-600", "input_tokens": 600},
             NATURAL | {"id": "nat-6000", "input_tokens": 6000},
             CONTROLLED | {"id": "ctl-600", "input_tokens": 600}]  # fmt: skip
    return Matrix.model_validate(
        {"campaign": {"name": "p", "seed": 1}, "arms": arms, "cells": cells}
    )


def work_of(m: Matrix) -> list[tuple[Any, list[Any]]]:
    return [(arm, m.cells_for(arm)) for arm in m.arm_order()]


def probe(arm: str, cell: str, failure: str | None = None) -> PilotProbe:
    return PilotProbe(
        arm=arm, cell_id=cell, contract="natural", contract_cells=[], input_tokens=None,
        status="ok", finish_reason="stop", output_words=10, failure=failure,
        folder=f"pilot/{arm}/{cell}",
    )  # fmt: skip


def lanes(*arms: str, down: str | None = None) -> list[PilotLane]:
    return [PilotLane(arm=a, lane_run=f"lanes/{a}/campaign-001", reason=None if a != down else
                      "readiness: not ready after 900 s") for a in arms]  # fmt: skip


def blocked(decision: Any) -> set[tuple[str, str]]:
    return {(b.cell_id, b.arm) for b in decision.blocked}


def test_contracts_group_cells_by_what_they_ask_not_their_length() -> None:
    m = matrix("cand")
    found = contracts(m.cells, "cand")
    assert [[c.id for c in k.cells] for k in found] == [["nat-600", "nat-6000"], ["ctl-600"]]
    assert (found[0].longest.id, found[0].shortest.id) == ("nat-6000", "nat-600")


def test_a_length_only_the_candidate_refuses_blocks_that_length_on_every_arm() -> None:
    m = matrix("cand")
    probes = [probe("cand", "nat-6000", "the engine refused it: …"), probe("cand", "nat-600")]
    probes += [probe("cand", "ctl-600"), probe("inc", "nat-6000"), probe("inc", "ctl-600")]
    decision = decide(PilotMode.ON, work_of(m), "inc", lanes("cand", "inc"), probes)
    assert blocked(decision) == {("nat-6000", "cand"), ("nat-6000", "inc")}
    assert not decision.stopped
    inc = next(b for b in decision.blocked if b.arm == "inc")
    assert (
        "no candidate can run nat-6000 (cand: nat-6000: the engine refused it: …; nat-600: passed)"
        in inc.sentence
    )


def test_a_contract_broken_at_every_length_blocks_all_its_cells() -> None:
    m = matrix("cand")
    broken = "http_error: 500"
    probes = [probe("cand", "nat-6000", broken), probe("cand", "nat-600", broken)]
    probes += [probe("cand", "ctl-600"), probe("inc", "nat-6000"), probe("inc", "ctl-600")]
    decision = decide(PilotMode.ON, work_of(m), "inc", lanes("cand", "inc"), probes)
    assert blocked(decision) == {(c, a) for c in ("nat-600", "nat-6000") for a in ("cand", "inc")}


def test_one_candidate_failing_leaves_the_incumbent_its_pair_with_the_other() -> None:
    m = matrix("c1", "c2")
    probes = [probe("c1", "ctl-600", "it overran its 16-word contract: …")]
    probes += [probe(a, c) for a in ("c2", "inc") for c in ("nat-6000", "ctl-600")]
    probes += [probe("c1", "nat-6000")]
    decision = decide(PilotMode.ON, work_of(m), "inc", lanes("c1", "c2", "inc"), probes)
    assert blocked(decision) == {("ctl-600", "c1")}


def test_the_incumbent_failing_blocks_the_cell_on_every_arm() -> None:
    m = matrix("c1", "c2")
    probes = [probe(a, c) for a in ("c1", "c2") for c in ("nat-6000", "ctl-600")]
    probes += [probe("inc", "nat-6000"), probe("inc", "ctl-600", "it did not recall …")]
    decision = decide(PilotMode.ON, work_of(m), "inc", lanes("c1", "c2", "inc"), probes)
    assert blocked(decision) == {("ctl-600", a) for a in ("inc", "c1", "c2")}


def test_a_lane_that_could_not_serve_fails_every_cell_of_its_arm() -> None:
    m = matrix("cand")
    probes = [probe("inc", "nat-6000"), probe("inc", "ctl-600")]
    decision = decide(PilotMode.ON, work_of(m), "inc", lanes("cand", "inc", down="cand"), probes)
    assert blocked(decision) == {(c.id, a) for c in m.cells for a in ("cand", "inc")}
    sentences = {(b.cell_id, b.arm): b.sentence for b in decision.blocked}
    assert (
        "cand cannot run nat-600: its lane could not serve: readiness"
        in sentences[("nat-600", "cand")]
    )
    assert "(cand: its lane could not serve: readiness" in sentences[("nat-600", "inc")]


def test_a_strict_pilot_blocks_every_cell_run_left_and_stops() -> None:
    m = matrix("cand")
    probes = [probe("cand", "ctl-600", "it overran …"), probe("cand", "nat-6000"),
              probe("inc", "nat-6000"), probe("inc", "ctl-600")]  # fmt: skip
    decision = decide(PilotMode.STRICT, work_of(m), "inc", lanes("cand", "inc"), probes)
    assert decision.stopped and len(decision.blocked) == 6
    codes = {(b.cell_id, b.arm): b.reason_code for b in decision.blocked}
    assert (
        codes[("ctl-600", "cand")] == "pilot_failed" and codes[("nat-600", "inc")] == "stop_policy"
    )


def test_passing_pilot_blocks_nothing_and_the_mode_comes_from_the_matrix_first() -> None:
    m = matrix("cand")
    probes = [probe(a, c) for a in ("cand", "inc") for c in ("nat-6000", "ctl-600")]
    assert decide(PilotMode.STRICT, work_of(m), "inc", lanes("cand", "inc"), probes).blocked == []
    assert mode_of(None, True) is PilotMode.ON and mode_of(False, True) is None
    assert mode_of("strict", False) is PilotMode.STRICT and mode_of(None, False) is None


def outcome(**fields: Any) -> RequestOutcome:
    base: dict[str, Any] = {
        "cell_id": "c", "arm": "a", "attempt": 1, "plan_sha256": "p", "client_run": "r",
        "phase": Phase.PILOT, "index": 0, "stream": 0, "role": RequestRole.SINGLE,
        "status": Status.OK, "response_id": "x", "finish_reason": "stop", "http_status": 200,
        "error": None, "canary": "k", "prompt_sha256": "s", "wire_sha256": "w",
        "target_input_tokens": 8000, "input_tokens": 8003, "max_tokens": 256,
        "usage": Usage(prompt_tokens=8003, completion_tokens=40),
        "wall_anchor_utc": datetime(2026, 12, 1, tzinfo=UTC), "mono_anchor_ns": 0,
        "due_ns": 0, "send_ns": 0, "headers_ns": 1, "first_output_ns": 2,
        "first_content_ns": 2, "last_token_ns": 3, "end_ns": 4, "events": 3,
        "chunk_offsets_us": [1], "chunk_kinds": "c", "output_chars": 9, "output_words": 2,
        "output_sha256": "o", "output_excerpt": "two words", "reasoning_chars": 0,
        "contract_words": None, "marker_expected": None, "marker_found": None, "refusal": False,
    }  # fmt: skip
    return RequestOutcome.model_validate(base | fields)


def test_what_in_one_request_is_a_failure() -> None:
    assert probe_failure(outcome(), None) is None
    assert probe_failure(None, "prompt longer than the lane's max_model_len").startswith(  # type: ignore[union-attr]
        "it could not be planned on the lane"
    )
    refused = outcome(status=Status.HTTP_ERROR, http_status=400, refusal=True, error="too long")
    assert probe_failure(refused, None) == "the engine refused it: too long"
    cut = outcome(finish_reason="length", usage=Usage(prompt_tokens=8003, completion_tokens=189))
    assert "cut its output at 189 of the 256 max_tokens asked" in (probe_failure(cut, None) or "")
    full = Usage(prompt_tokens=600, completion_tokens=256)
    overrun = outcome(
        finish_reason="length",
        status=Status.LENGTH_LIMIT,
        contract_words=16,
        output_words=40,
        usage=full,
    )
    assert "overran its 16-word contract: 40 words" in (probe_failure(overrun, None) or "")
    assert "needle marker" in (probe_failure(outcome(marker_found=False), None) or "")
