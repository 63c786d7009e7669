"""The client's log and warmup folder names, and its exit statuses (the plan's and the
journal's names and models: ``faceoff.formats.attempt.request_plan`` and ``.journal``).

Here, apart from the client, so that the guards and the evidence audit can read how the
client ended without loading aiohttp or the runner.
"""

from __future__ import annotations

CLIENT_LOG = "client.log"  # the client's stdout and stderr, in the attempt folder
WARMUP_DIR = "warmup"  # an arm's warmups after each start, under its lane run folder

# Exit statuses of ``python -m workload.cell_client`` (128 + N: stopped by signal N).
EXIT_BAD_INPUT = 2
EXIT_DEADLINE = 3
