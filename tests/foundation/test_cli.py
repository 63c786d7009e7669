"""The `faceoff` CLI, run as a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path

from faceoff import __version__
from tests.foundation.cli import REPO, faceoff

GLM = REPO / "matrix" / "examples" / "glm53-exl3-vs-nvfp4.toml"


def test_validate_prints_plan_and_id() -> None:
    result = faceoff("validate", str(GLM))
    assert result.returncode == 0, result.stderr
    assert "42 cell runs, 21 matched pairs" in result.stdout
    assert "matrix id: " in result.stdout
    assert "exl3-r11" in result.stdout and "incumbent" in result.stdout


def test_validate_error_is_one_paragraph_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    text = GLM.read_text()
    pinned = text.split('image = "', 1)[1].split('"', 1)[0]
    bad.write_text(text.replace(pinned, "verdictai/glm53-flash-exl3-k4:r19-sm120", 1))
    result = faceoff("validate", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
    assert "arms[0] (name='exl3-r11').image" in result.stderr


def test_freeze_writes_the_id_and_status_reads_an_empty_ledger(tmp_path: Path) -> None:
    out = tmp_path / "frozen.json"
    result = faceoff("freeze", str(GLM), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.exists()
    again = faceoff("freeze", str(GLM), "-o", str(out))
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr
    status = faceoff("status", "--workdir", str(tmp_path))
    assert status.returncode == 0, status.stderr
    assert "campaigns" in status.stdout


EXL3_IMAGE = (
    "verdictai/glm53-flash-exl3-k4@"
    "sha256:0f1cdcc8891f1cc3a444121eb61d366289a1cbba285f0892dcbb24bc94961692"
)


def test_validate_and_status_answer_in_json_for_scripts(tmp_path: Path) -> None:
    result = faceoff("validate", str(GLM), "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["schema_version"], plan["cell_runs"], plan["matched_pairs"]) == (3, 42, 21)
    assert plan["power"] is None  # only with --power
    assert [a["name"] for a in plan["arms"]] == ["exl3-r11", "nvfp4-r2"]
    assert plan["cell_ids"][:2] == ["natural-10240-c1", "natural-10240-c2"]
    assert len(plan["cell_ids"]) == 21 and plan["stop_policy"] == "block_workload"
    assert plan["arms"][0]["image"] == EXL3_IMAGE  # in full
    assert plan["order"].startswith("the arms run one after another on GPU(s) 0, 1")
    assert [(w["check"], w["status"]) for w in plan["warnings"]] == [("time", "WARN")]
    assert "16.4 h, longer than the 8.0 h window 01:30-09:30" in plan["warnings"][0]["finding"]
    assert plan["arms"][0]["role"] == "incumbent" and plan["arms"][0]["url"].startswith("http://")
    parts = ("startup_s", "warmups_s", "cells_s", "restoration_s")
    worst = plan["worst_case"]
    assert worst["total_s"] == sum(worst[k] for k in parts) > 0
    status = faceoff("status", "--workdir", str(tmp_path), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == {"schema_version": 2, "all_hosts": False, "campaigns": []}


def test_validate_power_prints_what_the_plan_can_decide_and_warns_naming_the_cell(
    tmp_path: Path,
) -> None:
    """The demo's rule without a ledger: planned with the conservative default, every
    criterion warns; --json carries the same rows."""
    demo = REPO / "matrix" / "examples" / "sim-faceoff.toml"
    shown = faceoff("validate", str(demo), "--power", "--workdir", str(tmp_path / "none"))
    assert shown.returncode == 0, shown.stderr
    assert "What the plan can decide" in shown.stdout
    assert "WARN natural-8192-c1 TTFT p50: 4 requests give" in " ".join(shown.stdout.split())
    result = faceoff(
        "validate", str(demo), "--power", "--json", "--workdir", str(tmp_path / "none")
    )
    rows = json.loads(result.stdout)["power"]["rows"]
    assert {(r["cell"], r["metric"]) for r in rows} == {
        (c, m) for c in ("natural-8192-c1", "natural-31600-c1") for m in ("ttft_s", "decode_tps")
    }
    assert all(r["variance"]["source"] == "default" and r["warning"] for r in rows)


def test_version_and_h_answer_as_every_command_line_tool_does() -> None:
    version = faceoff("--version")
    assert (version.returncode, version.stdout) == (0, f"{__version__}\n")
    for argv in (("-h",), ("run", "-h")):
        shown = faceoff(*argv)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("Usage: "), shown.stdout
        assert "-h, --help" in shown.stdout


def test_teardown_says_that_nothing_ran_when_it_stops_nothing(tmp_path: Path) -> None:
    done = faceoff("teardown", "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"nothing to stop: no lane of any campaign under {tmp_path} is running\n"
    named = faceoff("teardown", "night", "--workdir", str(tmp_path))
    assert named.stdout == "nothing to stop: no lane of campaign night is running\n"
