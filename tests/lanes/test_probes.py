"""The JSON smoke: judged on the visible answer, room for reasoning by default, and
declarable off (with a reason) for a model that cannot emit JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from faceoff.formats.receipt import ProbeSummary
from lanes.bringup import bring_up
from lanes.factory import open_lane
from lanes.http import HttpReply, UrllibHttp
from lanes.probes import judge_probe, probe_payload, run_probes
from lanes.readiness import Waiting
from matrix.arm import Probes
from tests.lanes import helpers
from tests.lanes.helpers import context, kill_recorded_processes, now


def reply(content: str, reasoning: str | None = None) -> HttpReply:
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    return HttpReply(200, json.dumps({"choices": [{"message": message}]}).encode(), 0.01)


def test_the_json_smoke_judges_the_visible_answer_only() -> None:
    assert judge_probe("json_smoke", 0, reply('{"status": "ok"}', reasoning="I must not {")).ok
    inline = reply('<think>\nThe user wants {"status"...\n</think>\n\n{"status": "ok"}')
    assert judge_probe("json_smoke", 0, inline).ok  # an engine without a reasoning parser
    empty = judge_probe("json_smoke", 0, reply("", reasoning='{"status": "ok"}'))
    assert not empty.ok and "not JSON" in empty.detail


def test_the_json_smoke_has_room_for_reasoning_and_can_skip_thinking() -> None:
    settings = Probes(chat_template_kwargs={"enable_thinking": False})
    payload = probe_payload("json_smoke", "llm.primary", settings)
    assert payload["max_tokens"] == 512
    assert payload["chat_template_kwargs"] == {"enable_thinking": False}
    assert probe_payload("smoke", "llm.primary", settings)["max_tokens"] == 32
    assert "chat_template_kwargs" not in probe_payload("smoke", "m", Probes())


def test_the_json_smoke_is_declared_off_only_with_a_reason() -> None:
    off = Probes(json_smoke=False, json_smoke_off_reason="random-weight test model emits no JSON")
    assert not off.json_smoke
    with pytest.raises(ValidationError, match="json_smoke = false needs json_smoke_off_reason"):
        Probes(json_smoke=False)
    with pytest.raises(ValidationError, match="json_smoke_off_reason is set but json_smoke is on"):
        Probes(json_smoke_off_reason="no JSON")


def test_new_probe_knobs_leave_an_old_matrix_id_alone() -> None:
    """Left out of the dump at their defaults: a matrix frozen before them keeps its id."""
    assert Probes().model_dump() == {
        "smoke_requests": 2, "json_smoke_requests": 2, "smoke_max_tokens": 32,
        "poll_interval_s": 1.0,
    }  # fmt: skip
    assert "engine" not in helpers.arm().model_dump()


def test_a_reasoning_model_passes_the_json_smoke_with_default_probes(tmp_path: Path) -> None:
    """The simulator's exl3-r11 profile reasons up to ~115 tokens before it answers."""
    the_arm = helpers.simulator_arm(
        simulator={"profile": "exl3-r11", "time_scale": 20}, probes={"poll_interval_s": 0.2}
    )
    lane = open_lane(the_arm, context(tmp_path, the_arm), python=helpers.SIM_PYTHON)
    try:
        up = bring_up(lane, UrllibHttp(), Waiting(now=now))
        assert up.ok, up.reason

        def json_smoke(settings: Probes) -> ProbeSummary:
            return run_probes(
                UrllibHttp(), "json_smoke", base_url=the_arm.base_url,
                model=the_arm.served_model, count=2, settings=settings,
            )  # fmt: skip

        summary = json_smoke(the_arm.probes)
        assert summary.ok, summary.results
        cut = json_smoke(the_arm.probes.model_copy(update={"json_smoke_max_tokens": 32}))
        assert not cut.ok  # the old budget: reasoning used it all, no visible answer
    finally:
        kill_recorded_processes(tmp_path)
