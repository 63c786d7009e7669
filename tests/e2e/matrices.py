"""Small campaign matrices for end-to-end runs, written as real TOML files.

Two simulator arms on the ``tiny`` profile run fast (``time_scale``) on free
ports; two natural cells (C1 and C2) make a 2-arm, 4-cell-run campaign. A
lane may be a host process or the simulator image by digest, may carry faults,
and the incumbent may sit behind the test router.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import free_port

TIME_SCALE = 20.0
NOT_APPLICABLE = {"gpu_memory": "the test hosts have no GPUs"}
# The shared test hosts stall, and a loaded one (parallel workers, busy neighbours) misses
# scrape ticks; the host_stall and coverage rules have their own tests (tests/guards).
LOADED_HOST = {
    "max_stalled_requests": 1.0,
    "max_client_cpu_wait": 1.0,
    "min_coverage": 0.2,
    "max_consecutive_misses": 40,
}


def loaded_host_toml(**more: float) -> str:
    """LOADED_HOST (and ``more``) as a `[thresholds]` table to append to an example's text."""
    values = LOADED_HOST | more
    return "\n[thresholds]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())


def toml_value(value: Any) -> str:
    """TOML for JSON-like values: inline tables and arrays, JSON-compatible strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def write_matrix(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / f"{data['campaign']['name']}.toml"
    path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in data.items()))
    return path


def arm(name: str, role: str, *, image: str | None = None, **fields: Any) -> dict[str, Any]:
    simulator: dict[str, Any] = {"profile": "tiny", "time_scale": TIME_SCALE}
    simulator |= fields.pop("simulator", {})
    base: dict[str, Any] = {
        "name": name,
        "role": role,
        "lane": "docker" if image else "simulator",
        "port": free_port(),
        "served_model": "sim-tiny",
        "startup_deadline_s": 60.0,
        "warmups": 1,
        "probes": {"poll_interval_s": 0.1},
        "simulator": simulator,
    }
    if image:
        base["image"] = image
    return base | fields


def campaign(name: str, arms: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    cell = {"kind": "natural", "input_tokens": 600, "requests": 4, "deadline_s": 60.0}
    cell["sampling"] = {"max_tokens": 48}
    data: dict[str, Any] = {
        "schema_version": 1,
        "campaign": {"name": name, "seed": 11, "stop_policy": "continue"},
        "arms": arms,
        "cells": [cell | {"id": "natural-600-c1", "concurrency": 1},
                  cell | {"id": "natural-600-c2", "concurrency": 2}],
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST,
    }  # fmt: skip
    return data | extra
