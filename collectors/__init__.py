"""Samplers around a cell: engine /metrics, GPU via NVML, host and lane memory; cadence and
the per-cell telemetry summary. Entry point: ``collectors.cell_samplers.CellCollectors``."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "aliases",
    "cadence",
    "cell_samplers",
    "cgroup",
    "deltas",
    "engine",
    "gpu",
    "host",
    "inventory",
    "sampler",
    "settings",
    "speculation",
    "stall_log",
    "telemetry",
]
