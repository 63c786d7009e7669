"""``deploy/gpu-check``: its module loaded from its path (the folder's name is no package name)
and its shell entry run as an operator runs it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from collectors.gpu.nvml import PynvmlLibrary

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "deploy" / "gpu-check"
ENTRY = FOLDER / "gpu-check"


@cache
def gpu_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", FOLDER / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # pydantic resolves the report's annotations through it
    spec.loader.exec_module(module)
    return module


def no_gpu() -> str | None:
    """Why this host has no NVIDIA GPU to check, or None when NVML lists one."""
    module = gpu_check()
    try:
        module.gpu_ids(PynvmlLibrary())
    except module.NoGpu as exc:
        return str(exc)
    return None


def run_entry(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENTRY), *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
