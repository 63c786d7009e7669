"""`faceoff validate` warns of what the matrix alone shows will cost the night, without a
host: each case as a user writes it, the warning naming the arm or cell and the fix; the
matrix stays valid (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.matrices import write_matrix
from tests.foundation.cli import faceoff

DIGEST = "sha256:" + "ab" * 32


def docker_arm(name: str, role: str, port: int, **fields: Any) -> dict[str, Any]:
    mount = {"source": f"/srv/models/{name}", "target": f"/models/{name}"}
    return {
        "name": name, "role": role, "lane": "docker", "image": f"vllm/vllm-openai@{DIGEST}",
        "engine": "vllm", "command": [f"/models/{name}"], "gpu_ids": [0, 1], "port": port,
        "served_model": "llm", "mounts": [mount],
    } | fields  # fmt: skip


def matrix(**arm_fields: Any) -> dict[str, Any]:
    arms = [
        docker_arm("fp8", "incumbent", 8000, **arm_fields),
        docker_arm("fp4", "candidate", 8001),
    ]
    return {
        "schema_version": 1,
        "campaign": {"name": "warned", "seed": 1},
        "arms": arms,
        "cells": [{"kind": "natural", "input_tokens": [1024, 4096], "concurrency": 1,
                   "requests": 4}],
    }  # fmt: skip


def warnings(tmp: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    result = faceoff("validate", str(write_matrix(tmp, data)), "--json")
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout)["warnings"])


def test_a_matrix_as_it_should_be_has_no_warning_and_says_how_it_runs(tmp_path: Path) -> None:
    result = faceoff("validate", str(write_matrix(tmp_path, matrix())))
    assert result.returncode == 0, result.stderr
    said = result.stdout
    assert f"image of fp8: vllm/vllm-openai@{DIGEST}" in said  # in full
    assert "cells (2): natural-1024-c1, natural-4096-c1" in said
    assert (
        "order: the arms run one after another on GPU(s) 0, 1, never at once: fp8 then fp4" in said
    )
    assert "stop policy block_workload: a failed cell blocks the later cells of its kind" in said
    assert "no warnings: `faceoff preflight MATRIX` checks the host" in said


FAILS = [
    ({"gpu_ids": []}, "gpu_ids", "every one of its 2 cell(s) would be blocked family_missing"),
    ({"engine_args": ["--tensor-parallel-size", "4"]}, "parallel", "ask for 4 GPUs"),
    ({"mounts": [{"source": "fp8", "target": "/models/fp8"}]}, "mounts", "named volume"),
    ({"command": ["/models/fp8-r2"]}, "model_path", "is under no mount target"),
    ({"memory_limit": "52GiB"}, "lane_settings", "is no size Docker reads"),
    ({"memory_limit": "52"}, "lane_settings", "Docker reads it as 52 bytes"),
]  # fmt: skip
WARNS = [
    ({"memory_limit": "52GB"}, "lane_settings", "binary units"),
    ({"engine": None, "command": None}, "lane_settings", 'declare engine = "vllm"'),
]  # fmt: skip


def edited(**fields: Any) -> dict[str, Any]:
    """The matrix with the incumbent's fields set (None: left out)."""
    data = matrix(**{k: v for k, v in fields.items() if v is not None})
    for key in [k for k, v in fields.items() if v is None]:
        del data["arms"][0][key]
    return data


@pytest.mark.parametrize(("fields", "check", "words"), FAILS)
def test_a_matrix_that_would_lose_the_night_is_refused(
    tmp_path: Path, fields: dict[str, Any], check: str, words: str
) -> None:
    """A FAIL the matrix alone shows would stop the run at its preflight: an error, exit 2."""
    result = faceoff("validate", str(write_matrix(tmp_path, edited(**fields))))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and "FAIL" not in result.stderr + result.stdout
    assert f"{check}: arm fp8: " in result.stderr and words in result.stderr


@pytest.mark.parametrize(("fields", "check", "words"), WARNS)
def test_a_matrix_that_may_cost_the_night_warns(
    tmp_path: Path, fields: dict[str, Any], check: str, words: str
) -> None:
    found = [w for w in warnings(tmp_path, edited(**fields)) if w["subject"] == "arm fp8"]
    assert [w["check"] for w in found] == [check], found
    assert words in found[0]["finding"] + (found[0]["fix"] or "")


def test_a_process_lane_with_an_image_and_an_unknown_effort_warn(tmp_path: Path) -> None:
    data = matrix()
    data["arms"][0] |= {"lane": "process", "command": ["vllm", "serve", "/models/fp8"]}
    data["cells"][0]["sampling"] = {"reasoning_effort": "maximum"}
    found = {(w["check"], w["subject"]): w for w in warnings(tmp_path, data)}
    assert "ignores image, mounts" in found[("lane_settings", "arm fp8")]["finding"]
    effort = found[("lane_settings", "cell natural-1024-c1")]
    assert "reasoning_effort 'maximum' is none of" in effort["finding"]


def test_a_worst_case_longer_than_the_window_warns(tmp_path: Path) -> None:
    data = matrix()
    data["campaign"]["window"] = "23:00-23:30"
    (found,) = warnings(tmp_path, data)
    assert (
        found["check"] == "time" and "longer than the 0.5 h window 23:00-23:30" in found["finding"]
    )


def test_fields_that_may_contradict_on_purpose_warn_and_name_both(tmp_path: Path) -> None:
    """The softer mis-sets: valid (exit 0), each a `fields` warning naming the fields."""
    data = matrix(startup_deadline_s=20, engine_args=["--gpu-memory-utilization", "1.5",
                                                      "--frobnicate"])  # fmt: skip
    data["arms"][1]["served_model"] = "llm-fp4"
    data["cells"][0] |= {"deadline_s": 600, "request_deadline_s": 900}
    data["families"] = {"not_applicable": {"gpu_memory": "copied from the rehearsal"}}
    data["thresholds"] = {"max_stalled_requests": 1.0, "max_client_cpu_wait": 1.0}
    found = [w for w in warnings(tmp_path, data) if w["check"] == "fields"]
    said = {w["finding"].split(":")[0]: w for w in found}
    assert all(w["status"] == "WARN" and w["fix"] for w in found)
    assert "startup_deadline_s = 20" in said["startup_deadline_s"]["finding"]
    assert "--gpu-memory-utilization 1.5" in said["engine_args --gpu-memory-utilization"]["finding"]
    assert "knows no flag --frobnicate" in said["engine_args"]["finding"]
    assert "fp8: 'llm', fp4: 'llm-fp4'" in said["arms.served_model"]["finding"]
    deadlines = said["request_deadline_s, deadline_s"]
    assert deadlines["subject"] == "cell natural-4096-c1" and "900 is above" in deadlines["finding"]
    rehearsal = said["families.not_applicable.gpu_memory, arms.gpu_ids"]
    assert "arm(s) fp8, fp4 run on GPUs" in rehearsal["finding"]
    (stalls,) = [w for k, w in said.items() if k.startswith("thresholds (")]
    assert "max_stalled_requests = 1 (default 0.1)" in stalls["finding"]
    shown = faceoff("validate", str(write_matrix(tmp_path, data)))
    assert shown.returncode == 0, shown.stderr
    assert "from [families.not_applicable] on a GPU night" in shown.stdout  # no markup eaten


def test_two_arms_with_one_recipe_warn_unless_the_night_is_an_aa(tmp_path: Path) -> None:
    data = matrix()
    data["arms"][1] |= {k: data["arms"][0][k] for k in ("command", "mounts")}
    (twin,) = [w for w in warnings(tmp_path, data) if w["check"] == "fields"]
    assert twin["subject"] == "arm fp4" and "A/A comparison nobody declared" in twin["finding"]
    data["campaign"]["aa"] = True
    assert [w for w in warnings(tmp_path, data) if w["check"] == "fields"] == []
