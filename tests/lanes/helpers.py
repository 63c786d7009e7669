"""Arms, contexts and clean-up shared by the lane and restoration tests."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from lanes.lane_context import LaneContext, LanePurpose, next_run_dir
from lanes.leftovers import campaign_containers, live_process_records
from matrix.arm import Arm
from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SIM_PYTHON = sys.executable  # runs `-m simulator` for simulator lanes
# The simulator's small test profile, made to report the quantization the arms pin.
SIM_PROFILE = {"profile": "tiny", "time_scale": 20}
SIM_ARGS = ["--set", "model.quantization=exl3"]


def simulator_arm(**fields: Any) -> Arm:
    """A host-process simulator arm on a free port, run fast."""
    values: dict[str, Any] = {
        "lane": "simulator",
        "command": None,
        "port": free_port(),
        "expected_quantization": "exl3",
        "probes": {"poll_interval_s": 0.2},
        "simulator": SIM_PROFILE,
        "engine_args": SIM_ARGS,
    }
    values.update(fields)
    return arm(**values)


def docker_simulator_arm(
    image: str, model: Path, target: str = "/models/glm", **fields: Any
) -> Arm:
    """The simulator image by digest, the checkpoint ``model`` mounted at ``target``."""
    values: dict[str, Any] = {
        "lane": "docker",
        "image": image,
        "command": None,
        "port": free_port(),
        "expected_quantization": "exl3",
        "weights_manifest": target,
        "mounts": [{"source": str(model), "target": target}],
        "secrets": {"HF_TOKEN": "OP_HF_TOKEN"},
        "startup_deadline_s": 120,
        "probes": {"poll_interval_s": 0.2},
        "simulator": SIM_PROFILE,
        "engine_args": SIM_ARGS,
    }
    values.update(fields)
    return arm(**values)


def now() -> datetime:
    return datetime.now(UTC)


def arm(**fields: Any) -> Arm:
    base: dict[str, Any] = {
        "name": "inc",
        "role": "incumbent",
        "lane": "process",
        "command": [PYTHON, "-c", "pass"],
        "port": 18000,
        "served_model": "llm.primary",
        "startup_deadline_s": 30,
    }
    base.update(fields)
    return Arm.model_validate(base)


def context(
    campaign_dir: Path,
    the_arm: Arm,
    *,
    campaign: str = "c1",
    purpose: LanePurpose = LanePurpose.CAMPAIGN,
    environ: dict[str, str] | None = None,
) -> LaneContext:
    return LaneContext(
        campaign=campaign,
        matrix_id="f" * 64,
        purpose=purpose,
        run_dir=next_run_dir(campaign_dir, the_arm.name, purpose),
        environ=environ if environ is not None else dict(os.environ),
        now=now,
    )


def kill_recorded_processes(campaign_dir: Path) -> None:
    """SIGKILL every process group a lane record under ``campaign_dir`` names, if still ours."""
    for _, record in live_process_records(campaign_dir, keep_restore=False):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(record.pid or 0), signal.SIGKILL)


def remove_campaign_containers(client: Any, campaign: str) -> None:
    """Force-remove every container labelled with the campaign, restored ones too."""
    for container in campaign_containers(client, campaign, keep_restore=False):
        with contextlib.suppress(Exception):
            container.remove(force=True)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def checkpoint(root: Path) -> Path:
    model = root / "glm-exl3"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text('{"quantization_config": {"quant_method": "exl3"}}')
    (model / "model.safetensors.index.json").write_text('{"weight_map": {"a": "model-1.st"}}')
    (model / "tokenizer.json").write_text('{"version": "1.0"}')
    (model / "tokenizer.model").write_bytes(b"\x00spm")
    (model / "sub" / "generation_config.json").write_text("{}")
    (model / "model-00001-of-00002.safetensors").write_bytes(b"\x01" * 1024)
    return model


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 120) -> None:
    """Poll ``predicate`` until it is true; a generous deadline sized for a loaded host."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
