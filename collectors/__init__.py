"""Samplers around a cell: engine /metrics, GPU via NVML, host and lane memory; cadence and
the per-cell telemetry summary. Entry point: ``collectors.cell.CellCollectors``."""
