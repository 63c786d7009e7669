"""The file names the collectors leave in an attempt folder.

Here, apart from the samplers, so that readers of those files (the summary, the guards,
the evidence audit) name them without loading an HTTP client, NVML or psutil.
"""

from __future__ import annotations

ENGINE_FILE = "engine.jsonl"
GPU_FILE = "gpu.jsonl"
HOST_FILE = "host.jsonl"
STALLS_FILE = "stalls.jsonl"
SCRAPE_FIRST = "scrape-first.txt"  # the engine's first /metrics answer, verbatim
SCRAPE_LAST = "scrape-last.txt"  # and its last
