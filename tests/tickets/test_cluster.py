"""Tickets clustered by reason: one per disposition and reason, with the next step to take."""

from __future__ import annotations

from datetime import UTC, datetime

from tickets.cluster import DEFAULT_STEP, BadRun, cluster, next_step, ticket_id

T0 = datetime(2026, 10, 17, 13, 0, tzinfo=UTC)


def run(cell: str, arm: str, disposition: str = "failed", code: str = "contract_overrun") -> BadRun:
    return BadRun(cell, arm, disposition, code, f"{cell} {code}", (f"cells/{cell}/{arm}/x.json",))


RUNS = [
    run("controlled-10240-c1", "exl3-r11"),
    run("controlled-40960-c1", "exl3-r11", "blocked", "stop_policy"),
    run("controlled-10240-c1", "nvfp4-r2", "blocked", "stop_policy"),
    run("natural-8192-c4", "nvfp4-r2", "failed", "oom"),
]


def test_runs_with_the_same_disposition_and_reason_share_one_ticket() -> None:
    tickets = cluster(RUNS, campaign="glm53", matrix_id="m" * 64, now=T0)
    assert [t.id for t in tickets] == [
        "glm53-blocked-stop-policy",
        "glm53-failed-contract-overrun",
        "glm53-failed-oom",
    ]
    blocked = tickets[0]
    assert blocked.cells == ["controlled-40960-c1/exl3-r11", "controlled-10240-c1/nvfp4-r2"]
    assert blocked.evidence == sorted(p for r in RUNS[1:3] for p in r.evidence)
    assert "stop policy" in blocked.suggested_next_step
    assert blocked.suggested_next_step.endswith(
        "To rerun: `faceoff review glm53 --decision rerun_cells --note 'WHAT WAS FIXED' "
        "--cell controlled-40960-c1/exl3-r11 --cell controlled-10240-c1/nvfp4-r2`, then "
        "`faceoff run MATRIX` with the campaign's matrix (only those runs get a new attempt)."
    )
    assert next_step("never_heard_of") == DEFAULT_STEP
    assert ticket_id("c", "failed", "Counter Mismatch!") == "c-failed-counter-mismatch"


def test_a_cause_one_request_can_show_names_the_exact_diagnose_command_of_each_cell() -> None:
    runs = [*RUNS, run("controlled-40960-c1", "nvfp4-r2"), run("controlled-10240-c1", "x")]
    tickets = cluster(runs, campaign="glm53", matrix_id="m" * 64, now=T0)
    by_code = {t.reason_code: t for t in tickets}
    overrun = by_code["contract_overrun"].suggested_next_step
    assert (
        "To diagnose: `faceoff run --diagnose controlled-10240-c1 MATRIX`, "
        "`faceoff run --diagnose controlled-40960-c1 MATRIX` with the campaign's matrix"
    ) in overrun
    assert overrun.index("To diagnose:") < overrun.index("To rerun:")
    assert "--diagnose" not in by_code["stop_policy"].suggested_next_step
    assert "--diagnose" not in by_code["oom"].suggested_next_step
